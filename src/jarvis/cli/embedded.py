"""Embedded mode: every service in one process, talking gRPC over loopback like the distributed mode."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry
from pydantic import AliasChoices, Field
from pydantic_settings import SettingsConfigDict

from jarvis.aggregator import probes
from jarvis.aggregator.debug_client import DEBUG_SERVICE
from jarvis.aggregator.registry_client import REGISTRY_SERVICE, RegistryClient, to_dict
from jarvis.aggregator.runtime_client import RUNTIME_SERVICE
from jarvis.aggregator.scheduler_client import SCHEDULER_SERVICE
from jarvis.aggregator.settings import AggregatorSettings
from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.common.grpc_server import RunningServer, create_server
from jarvis.common.internal_plane import InternalPlane, local_token
from jarvis.common.metrics import GrpcMetrics
from jarvis.common.settings import ProcessSettings
from jarvis.debug.server import build_debug_bindings
from jarvis.debug.settings import DebugSettings
from jarvis.registry.server import build_registry_bindings
from jarvis.registry.settings import RegistrySettings
from jarvis.runtime.app import Runtime
from jarvis.runtime.server import serve_runtime
from jarvis.runtime.settings import RuntimeSettings
from jarvis.scheduler.server import RunningScheduler, serve_scheduler
from jarvis.scheduler.settings import SchedulerSettings

log = logging.getLogger(__name__)

# What `jarvis_system action=restart_infra` restarts, in an order where each finds what it needs.
RESTART_ORDER = ("registry", "debug", "runtime", "scheduler")
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
        )

    def scheduler_settings(self, runtime_target: str) -> SchedulerSettings:
        """Embedded scheduling never needs Redis: an in-process timer fires schedules; JARVIS_SCHEDULER_* apply."""
        data_dir = self.resolved_data_dir / "scheduler"
        return SchedulerSettings(
            data_dir=data_dir,
            listen="127.0.0.1:0",
            runtime_target=runtime_target,
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


def start_registry(
    settings: RegistrySettings, metrics: GrpcMetrics | None, address: str, plane: InternalPlane | None = None
) -> RunningServer:
    """The registry's services, exactly those `jarvis serve registry` binds (see `registry_bindings`)."""
    return create_server(
        build_registry_bindings(settings), address, metrics=metrics, plane=plane or settings.internal_plane()
    )


def start_debug(settings: DebugSettings, metrics: GrpcMetrics | None, address: str) -> RunningServer:
    return create_server(build_debug_bindings(settings), address, metrics=metrics, plane=settings.internal_plane())


def start_runtime(settings: RuntimeSettings, metrics: GrpcMetrics | None) -> tuple[Runtime, RunningServer]:
    """The runtime serves even when Docker is down: its calls then say which engine to start."""
    return serve_runtime(settings, metrics)


class EmbeddedStack:
    """Runs the registry in-process and answers the aggregator's system controls for it."""

    mode = "embedded"

    def __init__(self, settings: EmbeddedSettings, metrics_registry: CollectorRegistry) -> None:
        settings.use_local_token()
        self.settings = settings
        self.registry_settings = settings.registry_settings()
        self.grpc_metrics = GrpcMetrics(metrics_registry)
        self.registry_server: RunningServer | None = None
        self.debug_server: RunningServer | None = None
        self.runtime: tuple[Runtime, RunningServer] | None = None
        self.scheduler: RunningScheduler | None = None
        self.metrics_registry = metrics_registry
        self.restart_requested = False
        self.stop_serving: Any = None  # set by the runner: a callable that stops the HTTP server gracefully
        self.client: RegistryClient | None = None

    def start(self) -> str:
        self.settings.resolved_data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.registry_server = start_registry(
            self.registry_settings, self.grpc_metrics, f"127.0.0.1:{self.settings.registry_port}"
        )
        self.ensure_debug()
        self.ensure_runtime()
        self.ensure_scheduler()
        return self.registry_target

    def ensure_scheduler(self) -> str:
        """Start the scheduler (with its in-process beat) on a free loopback port unless it runs; its target."""
        if self.scheduler is None:
            self.scheduler = serve_scheduler(
                self.settings.scheduler_settings(self.ensure_runtime()), self.metrics_registry, self.grpc_metrics
            )
        return self.scheduler_target

    @property
    def scheduler_target(self) -> str:
        return f"127.0.0.1:{self.scheduler.port}" if self.scheduler is not None else ""

    def ensure_runtime(self) -> str:
        """Start the runtime service on a free loopback port unless it runs; its target."""
        if self.runtime is None:
            self.runtime = start_runtime(self.settings.runtime_settings(), self.grpc_metrics)
        return self.runtime_target

    @property
    def runtime_target(self) -> str:
        return f"127.0.0.1:{self.runtime[1].port}" if self.runtime is not None else ""

    def ensure_debug(self) -> str:
        """Start the debug service on a free loopback port unless it runs; its target."""
        if self.debug_server is None:
            self.debug_server = start_debug(self.settings.debug_settings(), self.grpc_metrics, "127.0.0.1:0")
        return self.debug_target

    @property
    def debug_target(self) -> str:
        return f"127.0.0.1:{self.debug_server.port}" if self.debug_server is not None else ""

    @property
    def registry_target(self) -> str:
        assert self.registry_server is not None
        return f"127.0.0.1:{self.registry_server.port}"

    def stop(self, grace: float = 5.0) -> None:
        if self.scheduler is not None:
            self.scheduler.stop(grace)
            self.scheduler = None
        if self.registry_server is not None:
            self.registry_server.stop(grace)
            self.registry_server = None
        if self.debug_server is not None:
            self.debug_server.stop(grace)
            self.debug_server = None
        if self.runtime is not None:
            runtime, server = self.runtime
            server.stop(grace)
            runtime.close()
            self.runtime = None

    def _client(self) -> RegistryClient:
        assert self.client is not None, "the runner sets the registry client before serving"
        return self.client

    async def bootstrap(self, restore: bool = False) -> dict[str, Any]:
        client = self._client()
        result = to_dict(await client.call(client.registry.Bootstrap, pb.BootstrapRequest(restore=restore)))
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
        if component == "registry":
            assert self.registry_server is not None
            port = self.registry_server.port
            self.registry_server.stop(5.0)
            self.registry_server = start_registry(self.registry_settings, self.grpc_metrics, f"127.0.0.1:{port}")
            return port, REGISTRY_SERVICE
        if component == "debug":
            assert self.debug_server is not None
            port = self.debug_server.port
            self.debug_server.stop(5.0)
            self.debug_server = start_debug(self.settings.debug_settings(), self.grpc_metrics, f"127.0.0.1:{port}")
            return port, DEBUG_SERVICE
        if component == "runtime":
            assert self.runtime is not None
            runtime, server = self.runtime
            port = server.port
            server.stop(5.0)
            runtime.close()
            self.runtime = serve_runtime(self.settings.runtime_settings(), self.grpc_metrics, f"127.0.0.1:{port}")
            return port, RUNTIME_SERVICE
        assert self.scheduler is not None
        port = self.scheduler.port
        self.scheduler.stop(5.0)
        self.scheduler = serve_scheduler(
            self.settings.scheduler_settings(self.runtime_target),
            self.metrics_registry,
            self.grpc_metrics,
            f"127.0.0.1:{port}",
        )
        return port, SCHEDULER_SERVICE

    async def infra_status(self) -> dict[str, Any]:
        aggregator = self.settings.aggregator_settings(self.registry_target if self.registry_server else "")
        return {
            "docker": await probes.docker_ping(aggregator.docker_host),
            "redis": await probes.redis_ping(aggregator.redis_url),
            "celery": {
                "ok": None,
                "detail": "not needed: embedded, the scheduler fires schedules from an in-process timer",
            },
        }
