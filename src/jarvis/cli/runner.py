"""Runs the aggregator over HTTP (uvicorn) or stdio on top of an embedded or remote registry."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import uvicorn
from mcp.server.stdio import stdio_server
from prometheus_client import CollectorRegistry

from jarvis.aggregator.app import Aggregator
from jarvis.aggregator.downstream.proxy.targets import PROFILE
from jarvis.aggregator.gateways.debug import DEBUG_SERVICE
from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.gateways.registry_base import REGISTRY_SERVICE
from jarvis.aggregator.gateways.runtime import RUNTIME_SERVICE
from jarvis.aggregator.gateways.scheduler import SCHEDULER_SERVICE
from jarvis.aggregator.settings import AggregatorSettings
from jarvis.cli.embedded import EmbeddedSettings, EmbeddedStack
from jarvis.cli.gil import share_gil_promptly
from jarvis.cli.heap import freeze_startup_heap
from jarvis.cli.workers import WorkerPool, multi_worker_settings, reuse_port_socket, worker_count
from jarvis.common.errors import FailedPrecondition, NotFound

log = logging.getLogger(__name__)


class RemoteControl:
    """System controls when the services run as separate processes (compose, Kubernetes)."""

    mode = "distributed"

    def __init__(self, settings: AggregatorSettings) -> None:
        self.settings = settings
        self.client: RegistryGateway | None = None
        self.stop_serving: Any = None

    async def bootstrap(self, restore: bool = False) -> dict[str, Any]:
        assert self.client is not None
        return await self.client.bootstrap(restore)

    async def request_restart(self) -> dict[str, Any]:
        if self.stop_serving is None:
            raise FailedPrecondition("this aggregator was not started by `jarvis serve`; restart it where it runs")
        # The process exits after in-flight calls finish; the orchestrator starts it again.
        asyncio.get_running_loop().call_later(0.3, self.stop_serving)
        return {
            "restarting": True,
            "pid": os.getpid(),
            "detail": "in-flight calls finish, then this replica exits for its supervisor to restart it",
        }

    async def restart_infra(self) -> dict[str, Any]:
        """Nothing here is this process's to restart: say so for each service, with its health now."""
        from jarvis.aggregator import probes

        why = (
            "a separate process run by your orchestrator, which restarts it: `docker compose restart {name}` "
            "or `kubectl rollout restart deployment/jarvis-{name}`"
        )
        services = {
            "registry": (self.settings.registry_target, REGISTRY_SERVICE),
            "debug": (self.settings.debug_target, DEBUG_SERVICE),
            "runtime": (self.settings.runtime_target, RUNTIME_SERVICE),
            "scheduler": (self.settings.scheduler_target, SCHEDULER_SERVICE),
        }
        not_restarted = [
            {
                "component": name,
                "address": target,
                "why": why.format(name=name),
                "health": await probes.wait_serving(target, service, 0, self.settings.internal_plane())
                if target
                else {"ok": None, "detail": "not deployed (no target configured)"},
            }
            for name, (target, service) in services.items()
        ]
        return {"restarted": [], "not_restarted": not_restarted}


async def serve_http(
    aggregator: Aggregator,
    host: str,
    port: int,
    control: Any,
    banner: Any = None,
    sock: socket.socket | None = None,
) -> None:
    """Serve until stopped; on `sock` when given (a port shared by several workers), else on host:port."""
    config = uvicorn.Config(
        aggregator.app,
        host=host,
        port=port,
        lifespan="on",
        log_level="warning",
        timeout_graceful_shutdown=5,
        access_log=False,
        # Forwarded headers only from the proxies an admin named (uvicorn's default believes any from 127.0.0.1).
        proxy_headers=bool(aggregator.settings.proxies),
        forwarded_allow_ips=aggregator.settings.proxies,
    )
    server = uvicorn.Server(config)

    def stop() -> None:
        server.should_exit = True

    control.stop_serving = stop
    task = asyncio.create_task(server.serve(sockets=None if sock is None else [sock]))
    # uvicorn has no "listening" callback; poll its flag so the banner only prints once connectable.
    while not server.started and not task.done():  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    if server.started:
        # The banner first: /healthz already answers, so whoever waited for it may read the banner at once; the
        # freeze's one collection (~140 ms) came before it and left a window where Jarvis answered but had not said so.
        if banner is not None:
            banner()
        freeze_startup_heap()  # start-up is over (the lifespan ran): what exists now lives as long as the process
        share_gil_promptly()  # the loop now shares the process with threads that run Python (jarvis.cli.gil)
    await task
    await aggregator.close_clients()


def run_embedded(settings: EmbeddedSettings, banner: Any, before_restart: Any = None, services_up: Any = None) -> None:
    """`jarvis up`: registry in-process, aggregator over HTTP; re-executes itself on restart.

    With several workers this process is the first of them and runs the services once; the others reach
    them over loopback with the internal plane's credential (see `jarvis.cli.workers`).
    `before_restart` runs just before the re-execution (the data dir's lock is released there: the new
    image takes it again). `services_up` is told the services' addresses as soon as they serve, before the HTTP
    port answers, so nobody who saw /healthz answer finds them unannounced.
    """
    metrics_registry = CollectorRegistry()
    stack = EmbeddedStack(settings, metrics_registry)
    target = stack.start()
    if services_up is not None:
        services_up(stack.targets())
    pool: WorkerPool | None = None

    async def main() -> None:
        nonlocal pool
        aggregator_settings = settings.aggregator_settings(
            target, stack.debug_target, stack.runtime_target, stack.scheduler_target
        )
        client = RegistryGateway(target, aggregator_settings.read_cache_seconds, aggregator_settings.internal_plane())
        stack.client = client
        await client.bootstrap()
        aggregator_settings, sock, pool = start_workers(aggregator_settings, WorkerControl.mode)
        if pool is not None:  # another worker asks for the restart of the whole `jarvis up` with SIGHUP
            loop = asyncio.get_running_loop()
            loop.add_signal_handler(signal.SIGHUP, lambda: loop.create_task(stack.request_restart()))
        aggregator = Aggregator(aggregator_settings, client, stack, metrics_registry)
        await serve_http(aggregator, settings.host, settings.port, stack, lambda: banner(aggregator), sock)

    try:
        asyncio.run(main())
    finally:
        if pool is not None:
            pool.stop()
        stack.stop()
    if stack.restart_requested:
        if before_restart is not None:
            before_restart()
        sys.stdout.flush()
        os.execv(sys.executable, [sys.executable, "-m", "jarvis.cli", *sys.argv[1:]])  # noqa: S606 - argv, no shell


def start_workers(
    settings: AggregatorSettings, mode: str
) -> tuple[AggregatorSettings, socket.socket | None, WorkerPool | None]:
    """For more than one worker: the settings all of them run with, this process's socket and the others."""
    count = worker_count(settings.workers)
    if count == 1:
        return settings, None, None
    settings = multi_worker_settings(settings, count)
    sock = reuse_port_socket(settings.host, settings.port)
    # port 0: every worker on the one chosen; metrics_dir: made private (0700) by mkdtemp, removed by pool.stop
    settings = settings.model_copy(
        update={"port": sock.getsockname()[1], "metrics_dir": tempfile.mkdtemp(prefix="jarvis-metrics-")}
    )
    pool = WorkerPool(settings, mode, count - 1)
    pool.start()
    log.info("serving with %d aggregator workers on port %d", count, settings.port)
    return settings, sock, pool


def run_distributed(settings: AggregatorSettings) -> None:
    """`jarvis serve aggregator`: the registry is another process."""
    settings, sock, pool = start_workers(settings, RemoteControl.mode)
    try:
        # The main process bound first (so port 0 resolves once for every worker); its socket is ready as it is.
        serve_aggregator(settings, RemoteControl(settings), None if sock is None else lambda: sock)
    finally:
        if pool is not None:
            pool.stop()


def serve_aggregator(
    settings: AggregatorSettings, control: RemoteControl, listen: Callable[[], socket.socket] | None = None
) -> None:
    """One aggregator over HTTP whose backends all run elsewhere (their own processes, or a `jarvis up`).

    `listen` opens a worker's shared-port socket; it is called once the aggregator is built, because the kernel
    hands a listening socket its share of new connections at once, and a worker still building would hold them.
    """

    async def main() -> None:
        client = RegistryGateway(settings.registry_target, settings.read_cache_seconds, settings.internal_plane())
        control.client = client
        aggregator = Aggregator(settings, client, control, CollectorRegistry())
        sock = listen() if listen is not None else None
        await serve_http(aggregator, settings.host, settings.port, control, sock=sock)

    asyncio.run(main())


class WorkerControl(RemoteControl):
    """System controls of a `jarvis up` worker that is not the main process: the services live there."""

    mode = "embedded"

    def __init__(self, settings: AggregatorSettings, main_pid: int) -> None:
        super().__init__(settings)
        self.main_pid = main_pid

    async def request_restart(self) -> dict[str, Any]:
        os.kill(self.main_pid, signal.SIGHUP)  # the main process restarts, and every worker with it
        return {
            "restarting": True,
            "pid": self.main_pid,
            "detail": "in-flight calls finish, then Jarvis re-executes itself on the same address",
        }

    async def restart_infra(self) -> dict[str, Any]:
        raise FailedPrecondition(
            f"this call reached aggregator worker {os.getpid()}; the embedded services run in the main `jarvis up` "
            f"process ({self.main_pid}), which alone can restart them: ask again (each connection lands on any "
            "worker), or restart Jarvis with jarvis_system action=restart"
        )


PROFILE_SURFACE = "profile/"


def run_stdio(surface: str, settings: EmbeddedSettings, registry_target: str | None) -> None:
    """`jarvis mcp --surface NAME`: one surface over stdin/stdout for clients that only spawn."""
    metrics_registry = CollectorRegistry()
    stack = EmbeddedStack(settings, metrics_registry)
    target = registry_target or stack.start()

    async def main() -> None:
        aggregator_settings = settings.aggregator_settings(
            target, stack.ensure_debug(), stack.ensure_runtime(), stack.ensure_scheduler()
        )
        client = RegistryGateway(target, plane=aggregator_settings.internal_plane())
        stack.client = client
        if registry_target is None:
            await client.bootstrap()
        aggregator = Aggregator(aggregator_settings, client, stack, metrics_registry)
        profile = surface.removeprefix(PROFILE_SURFACE) if surface.startswith(PROFILE_SURFACE) else None
        server: Any = aggregator.mcp_servers.get(surface)
        if profile is not None:
            # A profile's tools are its downstream servers': this process hosts them, as `jarvis up` does.
            proxy = aggregator.downstream_routes.surfaces[PROFILE]
            proxy.targets.stdio_target = profile
            server = proxy.server
            await aggregator.downstream.start()
            if not proxy.exists(profile):
                await aggregator.downstream.stop()
                raise NotFound(f"no profile named '{profile}'; jarvis_profile action=list shows them")
        if server is None:
            raise NotFound(
                f"unknown surface '{surface}'; surfaces: {', '.join(aggregator.mcp_servers)}, or profile/<name>"
            )
        aggregator.usage.start()
        try:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
        finally:
            if profile is not None:
                await aggregator.downstream.stop()
            await aggregator.usage.stop()
            await aggregator.close_clients()

    try:
        asyncio.run(main())
    finally:
        stack.stop()
