"""Embedded mode: every service in one process, talking gRPC over loopback like the distributed mode."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry
from pydantic import AliasChoices, Field
from pydantic_settings import SettingsConfigDict

from jarvis.aggregator import probes
from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.settings import AggregatorSettings
from jarvis.common.internal_plane import local_token
from jarvis.common.metrics import GrpcMetrics
from jarvis.common.service import Factory, RunningService, ServiceSettings, launch
from jarvis.common.settings import ProcessSettings
from jarvis.debug import server as debug_server
from jarvis.debug.settings import DebugSettings
from jarvis.registry import server as registry_server
from jarvis.registry.settings import RegistrySettings
from jarvis.runtime import server as runtime_server
from jarvis.runtime.settings import RuntimeSettings
from jarvis.scheduler import server as scheduler_server
from jarvis.scheduler.settings import SchedulerSettings

log = logging.getLogger(__name__)
SettingsT = TypeVar("SettingsT", bound=ServiceSettings)

# What `jarvis_system action=restart_infra` restarts, in an order where each finds what it needs.
RESTART_ORDER = ("registry", "debug", "runtime", "scheduler")
STOP_ORDER = ("scheduler", "registry", "debug", "runtime")
READY_SECONDS = 15.0  # how long a restarted service may take to serve before it is reported unhealthy


class EmbeddedSettings(ProcessSettings):
    """Settings of `jarvis up` (env prefix JARVIS_); command-line options override them."""

    model_config = SettingsConfigDict(env_prefix="JARVIS_", extra="ignore")

    data_dir: Path = Path("~/.jarvis")
    host: str = "127.0.0.1"
    port: int = 8765
    registry_port: int = 0
    stateless: bool = False
    workers: int = Field(default=1, ge=0)  # aggregator processes on the port (0: one per core)
    require_auth: bool | None = None
    allowed_hosts: list[str] = Field(default_factory=list)
    database_url: str = Field(default="", validation_alias=AliasChoices("JARVIS_DATABASE_URL", "DATABASE_URL"))
    log_json: bool = False

    def use_local_token(self) -> None:
        """Give the internal plane a credential when none is configured: the embedded services listen on
        loopback only, yet any local user could reach their ports and mint tokens. The one made in the
        data dir (owner-only) also lets `jarvis --registry` reach this registry."""
        if self.internal_plane().token is None:
            self.resolved_data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            self.internal_token = local_token(self.resolved_data_dir)

    @property
    def plane_values(self) -> dict[str, Any]:
        """The credential settings every embedded service and client is given (TLS comes from the environment)."""
        return {"internal_token": self.internal_token, "internal_token_file": self.internal_token_file}

    def registry_settings(self) -> RegistrySettings:
        values: dict[str, Any] = {
            "data_dir": self.resolved_data_dir,
            "listen": f"127.0.0.1:{self.registry_port}",
            "aggregator_url": self.served_url,
            **self.plane_values,
        }
        if self.database_url:
            values["database_url"] = self.database_url
        return RegistrySettings(**values)

    @property
    def served_url(self) -> str:
        """Where `jarvis up` serves MCP (what its banner prints)."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host  # noqa: S104 - comparing
        return f"http://{f'[{host}]' if ':' in host else host}:{self.port}"

    def aggregator_settings(
        self, registry_target: str, debug_target: str = "", runtime_target: str = "", scheduler_target: str = ""
    ) -> AggregatorSettings:
        return AggregatorSettings(
            host=self.host,
            port=self.port,
            registry_target=registry_target,
            stateless=self.stateless,
            workers=self.workers,
            log_level=self.log_level,  # worker processes log as the main one does
            log_json=self.log_json,
            require_auth=self.require_auth,
            allowed_hosts=self.allowed_hosts,
            debug_target=debug_target,
            runtime_target=runtime_target,
            scheduler_target=scheduler_target,
            **self.plane_values,
            tunnel_dir=self.resolved_data_dir / "tunnel",
            discovery_cache_dir=self.resolved_data_dir / "discovery",
            data_dir=self.resolved_data_dir,  # sign-in's keys: <data dir>/oauth-keys unless JARVIS_OAUTH_KEYS_DIR
        )

    def scheduler_settings(self, runtime_target: str, registry_target: str = "") -> SchedulerSettings:
        """Embedded scheduling never needs Redis: an in-process timer fires schedules; JARVIS_SCHEDULER_* apply."""
        data_dir = self.resolved_data_dir / "scheduler"
        return SchedulerSettings(
            data_dir=data_dir,
            listen="127.0.0.1:0",
            runtime_target=runtime_target,
            registry_target=registry_target,  # runs of a person's schedule act for them (decision 0057)
            redis_url="",
            database_url=self.database_url or f"sqlite:///{data_dir / 'scheduler.db'}",
            **self.plane_values,
        )

    def runtime_settings(self) -> RuntimeSettings:
        """The runtime keeps its own database and project trees under <data dir>/runtime; JARVIS_RUNTIME_* apply.

        Without JARVIS_RUNTIME_SECRETS_KEY(_FILE), the key sealing project secrets is created there (0600).
        """
        data_dir = self.resolved_data_dir / "runtime"
        return RuntimeSettings(
            data_dir=data_dir,
            listen="127.0.0.1:0",
            secrets_key_create=True,
            database_url=self.database_url or f"sqlite:///{data_dir / 'runtime.db'}",
            **self.plane_values,
        )

    def debug_settings(self) -> DebugSettings:
        """JARVIS_DEBUG_* still apply; credentials may also go in <data dir>/debug.env, read on every call."""
        settings = DebugSettings(listen="127.0.0.1:0", **self.plane_values)
        if settings.credentials_file is None:
            settings.credentials_file = self.resolved_data_dir / "debug.env"
        return settings

    @property
    def resolved_data_dir(self) -> Path:
        return self.data_dir.expanduser().resolve()


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
