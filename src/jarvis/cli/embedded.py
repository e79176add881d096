"""Embedded mode: every service in one process, talking gRPC over loopback like the distributed mode."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry

from jarvis.aggregator import probes
from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.cli.settings import EmbeddedSettings
from jarvis.common.metrics import GrpcMetrics
from jarvis.common.service import Factory, RunningService, ServiceSettings, launch
from jarvis.debug import server as debug_server
from jarvis.registry import server as registry_server
from jarvis.runtime import server as runtime_server
from jarvis.scheduler import server as scheduler_server

__all__ = ["EmbeddedSettings", "EmbeddedStack"]  # EmbeddedSettings lives in settings.py, light to import

log = logging.getLogger(__name__)
SettingsT = TypeVar("SettingsT", bound=ServiceSettings)

# What `jarvis_system action=restart_infra` restarts, in an order where each finds what it needs.
RESTART_ORDER = ("registry", "debug", "runtime", "scheduler")
STOP_ORDER = ("scheduler", "registry", "debug", "runtime")
READY_SECONDS = 15.0  # how long a restarted service may take to serve before it is reported unhealthy


class EmbeddedStack:
    """Runs every service in-process, each as its `build` binds it, and answers the aggregator's system controls."""

    mode = "embedded"

    def __init__(self, settings: EmbeddedSettings, metrics_registry: CollectorRegistry) -> None:
        settings.use_local_token()
        self.settings = settings
        self.grpc_metrics = GrpcMetrics(metrics_registry)
        self.services: dict[str, RunningService] = {}
        self.metrics_registry = metrics_registry
        self.restart_requested = False
        self.stop_serving: Any = None  # set by the runner: a callable that stops the HTTP server gracefully
        self.client: RegistryGateway | None = None

    def start(self) -> str:
        self.settings.resolved_data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.services["registry"] = self._launch("registry", self.settings.registry_port)
        self.ensure_debug()
        self.ensure_runtime()
        self.ensure_scheduler()
        return self.registry_target

    def _launch(self, component: str, port: int = 0) -> RunningService:
        """Build and start one service on a loopback port (0: a free one), sharing this process's metrics."""
        address = f"127.0.0.1:{port}"
        if component == "registry":
            return self._start(registry_server.build, self.settings.registry_settings(), address)
        if component == "debug":
            return self._start(debug_server.build, self.settings.debug_settings(), address)
        if component == "runtime":
            # The runtime serves even when Docker is down: its calls then say which engine to start.
            return self._start(runtime_server.build, self.settings.runtime_settings(), address)
        settings = self.settings.scheduler_settings(self.ensure_runtime(), self._target("registry"))
        return self._start(scheduler_server.build, settings, address)

    def _start(self, build: Factory[SettingsT], settings: SettingsT, address: str) -> RunningService:
        return launch(build, settings, address, metrics=self.metrics_registry, grpc_metrics=self.grpc_metrics)

    def _ensure(self, component: str) -> str:
        if component not in self.services:
            self.services[component] = self._launch(component)
        return self._target(component)

    def _target(self, component: str) -> str:
        running = self.services.get(component)
        return f"127.0.0.1:{running.port}" if running is not None else ""

    def ensure_scheduler(self) -> str:
        """Start the scheduler (with its in-process beat) on a free loopback port unless it runs; its target."""
        return self._ensure("scheduler")

    def ensure_runtime(self) -> str:
        """Start the runtime service on a free loopback port unless it runs; its target."""
        return self._ensure("runtime")

    def ensure_debug(self) -> str:
        """Start the debug service on a free loopback port unless it runs; its target."""
        return self._ensure("debug")

    def targets(self) -> dict[str, str]:
        """Each running service's loopback address, by name."""
        return {component: self._target(component) for component in self.services}

    @property
    def scheduler_target(self) -> str:
        return self._target("scheduler")

    @property
    def runtime_target(self) -> str:
        return self._target("runtime")

    @property
    def debug_target(self) -> str:
        return self._target("debug")

    @property
    def registry_target(self) -> str:
        assert "registry" in self.services
        return self._target("registry")

    def stop(self, grace: float = 5.0) -> None:
        for component in STOP_ORDER:
            running = self.services.pop(component, None)
            if running is not None:
                running.stop(grace)

    def _client(self) -> RegistryGateway:
        assert self.client is not None, "the runner sets the registry client before serving"
        return self.client

    async def bootstrap(self, restore: bool = False) -> dict[str, Any]:
        client = self._client()
        result = await client.bootstrap(restore)
        result["data_dir"] = str(self.settings.resolved_data_dir)
        result["infrastructure"] = await self.infra_status()
        return result

    async def request_restart(self) -> dict[str, Any]:
        if self.stop_serving is None:
            return {"restarting": False, "reason": "this process was not started by `jarvis up`; restart it there"}
        self.restart_requested = True
        # Answer first; the HTTP server then stops accepting, lets in-flight calls finish, and re-executes.
        asyncio.get_running_loop().call_later(0.3, self.stop_serving)
        return {
            "restarting": True,
            "pid": os.getpid(),
            "detail": "in-flight calls finish, then Jarvis re-executes itself on the same address",
        }

    async def restart_infra(self) -> dict[str, Any]:
        """Restart each service embedded Jarvis runs, on its own address, and wait (bounded) until it serves again.

        Docker and Redis are the user's, not Jarvis's, under `jarvis up`: they are reported, not restarted.
        """
        restarted = [await self._restart(component) for component in RESTART_ORDER]
        return {
            "restarted": restarted,
            "healthy": all(r["healthy"] for r in restarted),
            "not_managed": await self.infra_status(),
        }

    async def _restart(self, component: str) -> dict[str, Any]:
        started = time.perf_counter()
        port, service = await asyncio.to_thread(self._restart_now, component)
        health = await probes.wait_serving(f"127.0.0.1:{port}", service, READY_SECONDS, self.settings.internal_plane())
        return {
            "component": component,
            "address": f"127.0.0.1:{port}",
            "healthy": health["ok"],
            "health": health["detail"],
            "seconds": round(time.perf_counter() - started, 3),
        }

    def _restart_now(self, component: str) -> tuple[int, str]:
        """Stop one service and start it again on the same port (the aggregator's channels keep working)."""
        port = self.services[component].port
        self.services.pop(component).stop(5.0)
        restarted = self.services[component] = self._launch(component, port)
        return port, restarted.bindings.health_names[0]  # its main service: the registry's, not ProjectService

    async def infra_status(self) -> dict[str, Any]:
        aggregator = self.settings.aggregator_settings(self._target("registry"))
        return {
            "docker": await probes.docker_ping(aggregator.docker_host),
            "redis": await probes.redis_ping(aggregator.redis_url),
            "celery": {
                "ok": None,
                "detail": "not needed: embedded, the scheduler fires schedules from an in-process timer",
            },
        }
