"""The aggregator's ASGI application: every surface, /livez, /readyz and /metrics behind the MCP gate."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any

from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from jarvis.aggregator import health
from jarvis.aggregator.aliases import build_alias_table
from jarvis.aggregator.auth import GateSettings, McpGate, TokenVerifier
from jarvis.aggregator.context import SystemControl, ToolContext
from jarvis.aggregator.direct_calls import DirectToolCalls, SurfaceCalls
from jarvis.aggregator.discovery.session_ids import StatelessSessionIds
from jarvis.aggregator.downstream import metrics as downstream_metrics
from jarvis.aggregator.downstream.routes import build_downstream, create_host
from jarvis.aggregator.gateways.debug import DebugGateway
from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.gateways.runtime import RuntimeGateway
from jarvis.aggregator.gateways.scheduler import SchedulerGateway
from jarvis.aggregator.mcp_server import Binding, ServesItself, build_mcp_server
from jarvis.aggregator.metrics import AggregatorMetrics
from jarvis.aggregator.ratelimit import Limit, RateLimiter
from jarvis.aggregator.sessions import SessionLedger, TrackedSessionManager
from jarvis.aggregator.settings import AggregatorSettings
from jarvis.aggregator.surfaces.debug import build_debug_surface
from jarvis.aggregator.surfaces.discovery import DISCOVERY_PATH, build_discovery_surface
from jarvis.aggregator.surfaces.jarvis import build_jarvis_surface
from jarvis.aggregator.surfaces.orchestrator import build_orchestrator_surface
from jarvis.aggregator.tooling.tool import Surface
from jarvis.aggregator.usage import UsageRecorder
from jarvis.aggregator.worker_metrics import WorkerMetrics

VERSION = package_version("jarvis-aggregator")


def build_surfaces(ctx: ToolContext) -> list[Surface]:
    """Every surface this aggregator serves, one builder per line."""
    return [
        build_discovery_surface(ctx),
        build_jarvis_surface(ctx),
        build_debug_surface(ctx),
        build_orchestrator_surface(ctx),
    ]


class Aggregator:
    """Owns the surfaces, their MCP servers and session managers, and the ASGI app serving them."""

    def __init__(
        self,
        settings: AggregatorSettings,
        registry: RegistryGateway,
        system: SystemControl,
        metrics_registry: CollectorRegistry,
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.metrics_registry = metrics_registry
        self.metrics = AggregatorMetrics(metrics_registry)
        self.usage = UsageRecorder(registry)
        plane = registry.plane  # the credential the runner gave the registry client serves every backend
        runtime = RuntimeGateway(settings.runtime_target, plane) if settings.runtime_target else None
        self.downstream, self.shares = create_host(registry, settings, self.usage, runtime)
        downstream_metrics.register(self.downstream, metrics_registry)
        self.context = ToolContext(
            registry=registry,
            usage=self.usage,
            system=system,
            project_root=settings.project_root,
            started_at=time.time(),
            auth_mode="token required" if settings.auth_required else "loopback-open",
            debug=DebugGateway(settings.debug_target, plane) if settings.debug_target else None,
            runtime=runtime,
            scheduler=SchedulerGateway(settings.scheduler_target, plane) if settings.scheduler_target else None,
            redis_url=settings.redis_url,
            downstream=self.downstream,
            shares=self.shares,
            discovery_cache=settings.discovery_cache_dir,
            discovery_dense=settings.discovery_dense,
        )
        self.surfaces = build_surfaces(self.context)
        self.context.events.served.publish(tuple(self.surfaces))
        self.aliases = build_alias_table(self.surfaces)
        self.binding = Binding(self.aliases, self.usage, self.metrics, VERSION)
        self.mcp_servers = {s.name: build_mcp_server(s, self.binding) for s in self.surfaces}
        # One ledger of session owners for every surface's manager: the per-token cap spans them all.
        self.sessions = SessionLedger(settings.max_sessions_per_token)
        self.managers = {
            s.name: TrackedSessionManager(
                self.sessions,
                app=self.mcp_servers[s.name],
                stateless=settings.stateless,
                json_response=settings.json_response,
                # Host/Origin are validated by the gate before authentication.
                security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
                max_request_body_size=settings.max_body_bytes,
            )
            for s in self.surfaces
        }
        self.downstream_routes = build_downstream(
            self.downstream, self.shares, self.usage, self.metrics, settings, VERSION, self.sessions
        )
        self.worker_metrics = (
            WorkerMetrics(metrics_registry, Path(settings.metrics_dir), settings.worker_slot)
            if settings.metrics_dir
            else None
        )
        self.app = self._build_app()
        self.shares.tunnels.app = self.app  # a tunnel's listener serves its share through the same gate

    def _build_app(self) -> Any:
        routes = [Route(s.path, endpoint=self._surface_app(s)) for s in self.surfaces]
        routes += self.downstream_routes.routes()
        # /healthz is the liveness answer under its older name.
        routes += [
            Route("/livez", self._livez),
            Route("/healthz", self._livez),
            Route("/readyz", self._readyz),
            Route("/metrics", self._metrics),
        ]
        app = Starlette(routes=routes, lifespan=self._lifespan)
        hosts, origins = self.settings.host_patterns()
        gate = GateSettings(
            require_auth=self.settings.auth_required,
            allowed_hosts=hosts,
            allowed_origins=origins,
            max_body_bytes=self.settings.max_body_bytes,
        )
        verifier = TokenVerifier(self.registry, ttl=self.settings.token_cache_seconds)
        # Stateless replicas hold no MCP sessions; discovery's loaded tools still need a session id.
        inner = StatelessSessionIds(app, {DISCOVERY_PATH}) if self.settings.stateless else app
        limiter = RateLimiter(
            Limit(
                self.settings.rate_limit_per_second, self.settings.rate_limit_burst, self.settings.rate_limit_concurrent
            ),
            {tool: Limit(x.per_second, x.burst, x.concurrent) for tool, x in self.settings.rate_limit_tools.items()},
            self.metrics.rate_limited,
        )
        return McpGate(
            inner,
            gate,
            verifier,
            {s.path: s for s in self.surfaces},
            self.metrics,
            dynamic=self.downstream_routes.guard,
            sessions=None if self.settings.stateless else self.sessions,
            limiter=limiter,
            usage=self.usage,
        )

    def _surface_app(self, surface: Surface) -> Any:
        """The SDK's app for the surface's path; for a fixed tool list, with its tool calls answered directly."""
        sdk = StreamableHTTPASGIApp(self.managers[surface.name])
        if isinstance(surface, ServesItself) or not self.settings.direct_tool_calls:
            return sdk
        return DirectToolCalls(
            sdk,
            self.mcp_servers[surface.name],
            SurfaceCalls(surface, self.binding),
            self.metrics.direct_tool_calls.labels(surface.name),
            stateless=self.settings.stateless,
            json=self.settings.json_response,
        )

    @contextlib.asynccontextmanager
    async def _lifespan(self, _: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for manager in self.managers.values():
                await stack.enter_async_context(manager.run())
            await stack.enter_async_context(self.downstream_routes.run())
            self.usage.start()
            await self.downstream.start()
            publishing = asyncio.create_task(self.worker_metrics.run()) if self.worker_metrics else None
            try:
                yield
            finally:
                if publishing is not None:
                    publishing.cancel()
                    await asyncio.gather(publishing, return_exceptions=True)
                await self.shares.tunnels.close_all()  # nor does a tunnel's ssh client
                await self.downstream.stop()  # no downstream process outlives the aggregator
                await self.usage.stop()

    async def close_clients(self) -> None:
        """Close the channels to the registry and the backend services, once serving has ended."""
        await self.registry.close()
        for client in (self.context.debug, self.context.runtime, self.context.scheduler):
            if client is not None:
                await client.close()

    async def _livez(self, _: Request) -> Response:
        """Alive: this process answers HTTP. Asks nothing else, so a backend outage never restarts it.

        `pid` says which worker process answered, where several share the port."""
        return JSONResponse(
            {"status": "ok", "version": VERSION, "surfaces": [s.path for s in self.surfaces], "pid": os.getpid()}
        )

    async def _readyz(self, _: Request) -> Response:
        """Ready to serve: the backends it needs answer, each asked within 2 s; 503 names the one that does not."""
        ready, body = await health.readiness(self.context)
        return JSONResponse(body, status_code=200 if ready else 503)

    async def _metrics(self, _: Request) -> Response:
        """This process's metrics; with several workers, every worker's, each series labelled by its worker."""
        if self.worker_metrics is not None:
            body = await asyncio.to_thread(self.worker_metrics.render)
        else:
            body = generate_latest(self.metrics_registry)
        return Response(body, media_type=CONTENT_TYPE_LATEST)
