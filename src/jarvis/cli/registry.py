"""The registry as the CLI's admin commands reach it: a running one (`--registry`) or the data dir opened for the
command alone, called through the aggregator's own RegistryGateway."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import click

from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.common.errors import JarvisError
from jarvis.common.internal_plane import TOKEN_FILE_NAME, InternalPlane

if TYPE_CHECKING:  # the embedded stack imports every service: only the commands that run one load it
    from jarvis.cli.embedded import EmbeddedSettings

T = TypeVar("T")
P = ParamSpec("P")


def settings_for(data_dir: str | None, **overrides: Any) -> EmbeddedSettings:
    from jarvis.cli.embedded import EmbeddedSettings

    values = {k: v for k, v in overrides.items() if v is not None}
    if data_dir:
        values["data_dir"] = Path(data_dir)
    return EmbeddedSettings(**values)


class Registry:
    """Runs work against the registry with the aggregator's own client, one event loop per command."""

    def __init__(self, target: str, plane: InternalPlane) -> None:
        self.target, self.plane = target, plane

    def run(
        self, work: Callable[Concatenate[RegistryGateway, P], Awaitable[T]], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """`work(client, *args, **kwargs)`: a gateway method, or a function of the client."""

        async def run() -> T:
            client = RegistryGateway(self.target, read_cache_seconds=0, plane=self.plane)
            try:
                return await work(client, *args, **kwargs)
            finally:
                await client.close()

        return asyncio.run(run())


@contextlib.contextmanager
def open_registry(ctx: click.Context, **overrides: Any) -> Iterator[Registry]:
    """The registry: the running one named by --registry, or the data dir opened in-process.

    A running registry is called with the internal plane's credential: the configured one, else the one
    a local `jarvis up` made in the data dir. `overrides` are settings of the data dir's own (the host and port a
    running `jarvis up` serves, which the entries a registry opened here writes point at).
    """
    target = ctx.obj["registry"]
    server = None
    settings = settings_for(ctx.obj["data_dir"], **overrides)
    try:
        plane = settings.internal_plane()
    except JarvisError as exc:
        raise click.ClickException(str(exc)) from None
    if target and plane.token is None and (settings.resolved_data_dir / TOKEN_FILE_NAME).is_file():
        settings.use_local_token()
        plane = settings.internal_plane()
    if not target:
        settings.resolved_data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        if plane.token is None:  # the registry lives for this command only: a credential for it alone
            plane = plane.with_token(secrets.token_hex(32))
        from jarvis.common.service import launch
        from jarvis.registry import server as registry_server

        server = launch(registry_server.build, settings.registry_settings(), "127.0.0.1:0", plane=plane)
        target = f"127.0.0.1:{server.port}"
    try:
        yield Registry(target, plane)
    except JarvisError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        if server is not None:
            server.stop(1.0)
