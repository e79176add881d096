"""What `jarvis user disable` also does for issue 32: forget the person's downstream OAuth grants and API keys in
the registry's vault, so nothing Jarvis holds can act for them at a downstream server any more."""

from __future__ import annotations

import asyncio

import click

from jarvis.aggregator.gateways.vault import VaultGateway
from jarvis.cli.registry import open_registry


def forget_downstream_grants(ctx: click.Context, person: str) -> int:
    """Delete every vault entry of `person` (`user:<subject>`); how many there were."""
    with open_registry(ctx) as registry:

        async def run() -> int:
            vault = VaultGateway(registry.target, registry.plane)
            try:
                return await vault.delete_person(person)
            finally:
                await vault.close()

        return asyncio.run(run())
