"""The registry as the CLI's admin commands reach it: a running one (`--registry`) or the data dir opened for the
command alone, called through the aggregator's own RegistryGateway."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import click

from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.cli.datadir import DataDirLock
from jarvis.cli.settings import settings_for
from jarvis.common.errors import JarvisError
from jarvis.common.internal_plane import TOKEN_FILE_NAME, InternalPlane

T = TypeVar("T")
P = ParamSpec("P")


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


def serving_registry(data_dir: Path) -> str:
    """The registry of the `jarvis up` serving `data_dir` ("" when none serves it yet).

    Asking it spares a command opening the database, migrations and catalog a second time (most of its start,
    issue 46 item 2), and the data dir then has one writer."""
    return serving_services(data_dir).get("registry", "")


def serving_services(data_dir: Path) -> dict[str, str]:
    """Each service's address by name, of the `jarvis up` serving `data_dir` (empty when none serves it yet)."""
    lock = DataDirLock(data_dir)
    holder = lock.holder(wait=0.5)
    if holder is None or holder.command != "jarvis up" or not holder.registry or not _alive(holder.pid):
        return {}  # the file of a `jarvis up` killed before it could empty it names services no longer there
    return holder.services


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: not this user's `jarvis up`
        return False
    return pid > 0


@contextlib.contextmanager
def open_registry(ctx: click.Context, **overrides: Any) -> Iterator[Registry]:
    """The registry: the running one named by --registry, else the one of a `jarvis up` serving the data dir, else
    the data dir opened in-process.

    A running registry is called with the internal plane's credential: the configured one, else the one
    a local `jarvis up` made in the data dir. `overrides` are settings of the data dir's own (the host and port a
    running `jarvis up` serves, which the entries a registry opened here writes point at).
    """
    server = None
    settings = settings_for(ctx.obj["data_dir"], **overrides)
    target = ctx.obj["registry"] or serving_registry(settings.resolved_data_dir)
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
