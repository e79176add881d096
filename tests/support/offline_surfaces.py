"""Every surface Jarvis builds, with backends that are never reached: enough to read each tool's name, schemas,
handlers and summary without a registry, runtime or scheduler running."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from jarvis.aggregator.app import build_surfaces
from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.gateways.debug import DebugGateway
from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.gateways.runtime import RuntimeGateway
from jarvis.aggregator.gateways.scheduler import SchedulerGateway
from jarvis.aggregator.tooling.tool import Surface
from jarvis.aggregator.usage import UsageRecorder

UNREACHABLE = "127.0.0.1:9"  # channels connect lazily; nothing here makes a call


class NoSystem:
    """The system a test context has: none to bootstrap or restart."""

    mode = "test"

    async def bootstrap(self, restore: bool = False) -> dict[str, Any]:
        raise NotImplementedError

    async def request_restart(self) -> dict[str, Any]:
        raise NotImplementedError

    async def restart_infra(self) -> dict[str, Any]:
        raise NotImplementedError


def offline_context(registry: RegistryGateway) -> ToolContext:
    """A context whose backends are unreachable: enough to build every surface and read its tools."""
    return ToolContext(
        registry=registry,
        usage=UsageRecorder(registry),
        system=NoSystem(),
        project_root=Path("."),
        started_at=time.time(),
        debug=DebugGateway(UNREACHABLE),
        runtime=RuntimeGateway(UNREACHABLE),
        scheduler=SchedulerGateway(UNREACHABLE),
        discovery_dense=False,
    )


def offline_surfaces() -> list[Surface]:
    """The surfaces, built in an event loop of their own (gRPC channels need one) whose registry channel is closed
    before it ends."""

    async def build() -> list[Surface]:
        registry = RegistryGateway(UNREACHABLE)
        surfaces = build_surfaces(offline_context(registry))
        await registry.close()
        return surfaces

    return asyncio.run(build())
