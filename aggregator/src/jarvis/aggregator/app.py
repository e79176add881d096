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
from prometheus_client import CollectorRegistry
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from jarvis.aggregator import health
from jarvis.aggregator.aliases import build_alias_table
from jarvis.aggregator.auth.checks import GateSettings
from jarvis.aggregator.auth.gate import McpGate
from jarvis.aggregator.auth.metrics_access import MetricsAccess, exposition
from jarvis.aggregator.auth.verifier import TokenVerifier
from jarvis.aggregator.calls.pipeline import CallPipeline, default_steps
from jarvis.aggregator.calls.record import CallRecorder
from jarvis.aggregator.codemode.limits import CodePolicy
from jarvis.aggregator.console.build import build_console
from jarvis.aggregator.context import SystemControl, ToolContext
from jarvis.aggregator.direct_calls import DirectToolCalls, SurfaceCalls
from jarvis.aggregator.discovery.session_ids import StatelessSessionIds
from jarvis.aggregator.downstream.hosting import metrics as downstream_metrics
from jarvis.aggregator.downstream.proxy.routes import build_downstream, create_host
from jarvis.aggregator.downstream.proxy.targets import PROFILE, SHARE
from jarvis.aggregator.gateways.client import ServiceClient
from jarvis.aggregator.gateways.debug import DebugGateway
from jarvis.aggregator.gateways.oauth_state import OAuthStateGateway
from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.gateways.runtime import RuntimeGateway
from jarvis.aggregator.gateways.scheduler import SchedulerGateway
from jarvis.aggregator.gateways.vault import VaultGateway
from jarvis.aggregator.mcp_server import Binding, ServesItself, build_mcp_server
from jarvis.aggregator.metrics import AggregatorMetrics
from jarvis.aggregator.oauth.agent_sessions import LiveAgentSessions
from jarvis.aggregator.oauth.agents import AgentCredentials, RunCredentials
from jarvis.aggregator.oauth.resource import WELL_KNOWN, ProtectedResource, signing_keys
from jarvis.aggregator.oauth.server.admin import PeopleAdmin
from jarvis.aggregator.oauth.server.build import build_authorization_server
from jarvis.aggregator.oauth.server.people import People
from jarvis.aggregator.oauth.standing import StandingCache, keep_pausing, sweep
from jarvis.aggregator.ratelimit import Limit, RateLimiter
from jarvis.aggregator.sessions import SessionLedger, TrackedSessionManager
from jarvis.aggregator.settings import AggregatorSettings
from jarvis.aggregator.surfaces.admin import build_admin_surface
from jarvis.aggregator.surfaces.cards import CardAuth, ServerCards
from jarvis.aggregator.surfaces.debug import build_debug_surface
from jarvis.aggregator.surfaces.discovery import build_discovery_surface
from jarvis.aggregator.surfaces.discovery.code import code_policy
from jarvis.aggregator.surfaces.jarvis import build_jarvis_surface
from jarvis.aggregator.surfaces.orchestrator import build_orchestrator_surface
from jarvis.aggregator.surfaces.paths import DISCOVERY_PATH
from jarvis.aggregator.tooling.tool import Surface
from jarvis.aggregator.usage import UsageRecorder
from jarvis.aggregator.worker_metrics import WorkerMetrics
from jarvis.common import tracing
from jarvis.common.surfaces import SURFACE_PATHS

VERSION = package_version("jarvis-aggregator")


def build_surfaces(ctx: ToolContext, code: CodePolicy | None = None) -> list[Surface]:
    """Every surface this aggregator serves, one builder per line (`code`: code_run's policy)."""
    return [
        build_discovery_surface(ctx, code),
        build_jarvis_surface(ctx),
        build_debug_surface(ctx),
        build_orchestrator_surface(ctx),
        build_admin_surface(ctx),
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
        # Traces where OTEL_EXPORTER_OTLP_ENDPOINT is set; before any MCP server is built, as they keep the SDK's spans.
        tracing.configure("jarvis")
        self.settings = settings
        self.registry = registry
        self.metrics_registry = metrics_registry
        self.metrics = AggregatorMetrics(metrics_registry)
        self.usage = UsageRecorder(registry)
        plane = registry.plane  # the credential the runner gave the registry client serves every backend
        runtime = RuntimeGateway(settings.runtime_target, plane) if settings.runtime_target else None
        debug = DebugGateway(settings.debug_target, plane) if settings.debug_target else None
        scheduler = SchedulerGateway(settings.scheduler_target, plane) if settings.scheduler_target else None
        # Closed with the registry's channel once serving has ended; the context sees them only as gateways/protocols.
        self.backends: list[ServiceClient] = [client for client in (debug, runtime, scheduler) if client is not None]
        # A share's tunnel serves its share through this app, gate included (`serve` answers once it is built).
        self.downstream, self.shares = create_host(registry, settings, self.usage, runtime, self.serve)
        downstream_metrics.register(self.downstream, metrics_registry)
        # Sign-in's signing keys (None without sign-in): what the authorization server and agents sign, the gate checks.
        keys = signing_keys(settings)
        # An agent a signed-in person spawns acts for them at every surface (oauth/agents.py, decision 0057), and at
        # each profile served (the host replaces its dict on each read).
        self.agents = AgentCredentials(
            self.shares.base_url,
            keys,
            tuple(SURFACE_PATHS.values()),
            lambda: tuple(self.downstream.profiles),
            ttl_seconds=settings.agent_credential_seconds,
        )
        # The registry's sign-in records and downstream vault: the people admin's, and the authorization server's.
        self.sign_in_records = OAuthStateGateway(registry.target, plane)
        vault = VaultGateway(registry.target, plane)
        self.backends += [self.sign_in_records, vault]
        # One limiter and one pipeline for every door: a tool's bucket is the same whichever way it is reached.
        self.limiter = RateLimiter(
            Limit(settings.rate_limit_per_second, settings.rate_limit_burst, settings.rate_limit_concurrent),
            {tool: Limit(x.per_second, x.burst, x.concurrent) for tool, x in settings.rate_limit_tools.items()},
            self.metrics.rate_limited,
        )
        self.recorder = CallRecorder(self.usage, self.metrics, self.downstream.server_label)
        self.calls = CallPipeline(self.recorder, default_steps(self.limiter))
        self.context = ToolContext(
            registry=registry,
            usage=self.usage,
            system=system,
            project_root=settings.project_root,
            started_at=time.time(),
            auth_mode="token required" if settings.auth_required else "loopback-open",
            debug=debug,
            runtime=runtime,
            scheduler=scheduler,
            redis_url=settings.redis_url,
            downstream=self.downstream,
            shares=self.shares,
            discovery_cache=settings.discovery_cache_dir,
            discovery_dense=settings.discovery_dense,
            agents=self.agents,
            people=PeopleAdmin(self.sign_in_records, vault),
            calls=self.calls,
        )
        self.surfaces = build_surfaces(self.context, code_policy(settings))
        self.context.events.served.publish(tuple(self.surfaces))
        self.aliases = build_alias_table(self.surfaces)
        self.binding = Binding(self.aliases, self.calls, self.metrics, VERSION)
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
        # Sign-in for people (issue 31): the authorization server, when an OpenID provider is configured.
        self.authorization = build_authorization_server(
            settings, self.sign_in_records, self.shares.base_url, keys, self.metrics.rate_limited
        )
        # A consent link opens only in the browser of the person it was made for (decision 0062).
        browser = self.authorization.flow.browser if self.authorization is not None else None
        self.downstream_routes = build_downstream(
            self.downstream, self.shares, self.calls, settings, VERSION, self.sessions, browser
        )
        # The console (issue 49): web pages whose actions are tool calls through the same pipeline.
        self.console = build_console(
            settings,
            self.sign_in_records,
            self.binding,
            self.surfaces,
            self.shares.base_url,
            browser,
            self.downstream,
            self.surface_at,
        )
        self.worker_metrics = (
            WorkerMetrics(metrics_registry, Path(settings.metrics_dir), settings.worker_slot)
            if settings.metrics_dir
            else None
        )
        signed_in = keys is not None
        self.resource = ProtectedResource(
            self.shares.base_url,
            keys,
            publish=settings.auth_required or signed_in,
            surface_at=self.surface_at,
            # Disabling a person reaches their tokens and sessions on every replica within this cache's life.
            standing=StandingCache(self.sign_in_records, settings.token_cache_seconds) if signed_in else None,
            runs=RunCredentials(self.sign_in_records) if signed_in else None,
            agent_sessions=LiveAgentSessions(runtime, settings.token_cache_seconds) if runtime is not None else None,
        )
        self.verifier = TokenVerifier(
            registry,
            ttl=settings.token_cache_seconds,
            resource=self.resource,
            people=People(self.sign_in_records) if signed_in else None,
        )
        self.metrics_access = MetricsAccess(self.verifier, self.metrics) if settings.metrics_token_required else None
        self.app = self._build_app()

    async def serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The aggregator's app, gate included: what a share's tunnel listener serves (tunnel/listener.py)."""
        await self.app(scope, receive, send)

    def surface_at(self, path: str) -> str | None:
        """The name of the surface served at `path` (a fixed one, a profile or a share), as the gate finds it."""
        path = path.rstrip("/")
        fixed = next((s.name for s in self.surfaces if s.path == path), None)
        guard = self.downstream_routes.guard(path) if fixed is None else None
        return fixed if guard is None else guard.name

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
        routes += self.authorization.routes() if self.authorization is not None else []
        routes += self.resource.routes()
        routes += self.console.routes()
        # Each surface's, profile's and share's server card, public like the metadata above (decision 0064).
        published = WELL_KNOWN if self.resource.publish else None
        cards = ServerCards(
            self.shares.base_url,
            VERSION,
            CardAuth(self.settings.auth_required, published, self.resource.keys is not None),
        )
        kinds, own = self.downstream_routes.surfaces, [(s, self.mcp_servers[s.name]) for s in self.surfaces]
        routes += cards.routes(own, kinds[PROFILE], kinds[SHARE], self.shares)
        app = Starlette(routes=routes, lifespan=self._lifespan)
        hosts, origins = self.settings.host_patterns()
        gate = GateSettings(
            require_auth=self.settings.auth_required,
            allowed_hosts=hosts,
            allowed_origins=origins,
            max_body_bytes=self.settings.max_body_bytes,
        )
        # Stateless replicas hold no MCP sessions; discovery's loaded tools still need a session id.
        inner = StatelessSessionIds(app, {DISCOVERY_PATH}) if self.settings.stateless else app
        return McpGate(
            inner,
            gate,
            self.verifier,
            {s.path: s for s in self.surfaces},
            self.metrics,
            dynamic=self.downstream_routes.guard,
            sessions=None if self.settings.stateless else self.sessions,
            limiter=self.limiter,
            recorder=self.recorder,
            resource=self.resource,
        )

    def _sweep_disabled(self) -> asyncio.Task[None] | None:
        """With sign-in, a task ending the MCP sessions of people disabled meanwhile (decision 0057)."""
        standing = self.resource.standing
        if standing is None:
            return None

        async def end(session_ids: set[str]) -> int:
            # Jarvis's own surfaces and the profiles and shares it proxies: all their sessions are in one ledger.
            managers = [*self.managers.values(), *self.downstream_routes.managers.values()]
            return sum([await m.end(session_ids) for m in managers])

        return asyncio.create_task(
            sweep(self.sessions.owners, standing, end, max(1.0, self.settings.token_cache_seconds))
        )

    def _pause_disabled_owners(self) -> asyncio.Task[None] | None:
        """With sign-in and a scheduler, a task disabling the schedules of disabled people (decision 0057)."""
        if self.authorization is None or self.context.scheduler is None:
            return None
        interval = max(5.0, 5 * self.settings.token_cache_seconds)
        return asyncio.create_task(keep_pausing(self.sign_in_records, self.context.scheduler, interval))

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
            await self.console.announce()
            publishing = asyncio.create_task(self.worker_metrics.run()) if self.worker_metrics else None
            sweeping, pausing = self._sweep_disabled(), self._pause_disabled_owners()
            try:
                yield
            finally:
                for task in (publishing, sweeping, pausing):
                    if task is not None:
                        task.cancel()
                        await asyncio.gather(task, return_exceptions=True)
                await self.shares.tunnels.close_all()  # nor does a tunnel's ssh client
                await self.downstream.stop()  # no downstream process outlives the aggregator
                await self.usage.stop()

    async def close_clients(self) -> None:
        """Close the channels to the registry and the backend services, once serving has ended."""
        await self.registry.close()
        for client in self.backends:
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

    async def _metrics(self, request: Request) -> Response:
        """This process's metrics; with several workers, every worker's, each series labelled by its worker.

        Where `metrics_require_token` holds (by default whenever tokens are required), only for a token of
        scope `metrics` or admin (MetricsAccess)."""
        if self.metrics_access is not None and (refusal := await self.metrics_access.refusal(request)):
            return refusal
        accept = request.headers.get("accept", "")
        if (workers := self.worker_metrics) is not None:  # merged from the workers' files, exemplars kept
            return await asyncio.to_thread(lambda: exposition(workers.merged(), accept))
        return exposition(self.metrics_registry, accept)
