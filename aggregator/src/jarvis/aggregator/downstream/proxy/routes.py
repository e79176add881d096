"""HTTP routes of the profile and share surfaces, and how the auth gate guards their dynamic paths."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from typing import cast

from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from jarvis.aggregator.calls.pipeline import CallPipeline
from jarvis.aggregator.direct_calls import DirectToolCalls
from jarvis.aggregator.downstream.auth.routes import ConsentRoutes, SignsInBrowsers
from jarvis.aggregator.downstream.hosting.host import DownstreamHost
from jarvis.aggregator.downstream.hosting.supervisor import HostOptions
from jarvis.aggregator.downstream.proxy.answer_mode import PerRequestAnswers, answer_as_json, answer_mode
from jarvis.aggregator.downstream.proxy.direct import ProxiedCalls
from jarvis.aggregator.downstream.proxy.shares import Shares
from jarvis.aggregator.downstream.proxy.surface import ProxySurface
from jarvis.aggregator.downstream.proxy.targets import PROFILE, SHARE, ProfileTargets, ShareTargets, Targets
from jarvis.aggregator.downstream.proxy.tasks import TaskHandles
from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.gateways.runtime import RuntimeGateway
from jarvis.aggregator.gateways.vault import VaultGateway
from jarvis.aggregator.sessions import SessionLedger, TrackedSessionManager
from jarvis.aggregator.settings import AggregatorSettings
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.request import MESSAGES_SCOPE_KEY
from jarvis.aggregator.tunnel.manager import Tunnels
from jarvis.aggregator.usage import UsageRecorder

PROFILE_PATH = re.compile(r"^/mcp/profile/([^/]+)$")
SHARE_PATH = re.compile(r"^/share/([^/]+)/mcp$")


class Guard:
    """What the gate asks of a profile or share path: who may reach it and which calls they may make."""

    def __init__(self, targets: Targets, target: str) -> None:
        self.targets = targets
        self.target = target
        self.name = targets.name
        self.require_token = targets.require_token

    async def authorize(self, principal: Principal) -> str | None:
        """Asked only once the caller is authenticated: a name this aggregator does not know yet (made through
        another worker or replica a moment ago) is looked up only then, so an unauthenticated request never
        reaches a lookup."""
        if not self.targets.reaches(principal):
            return f"your token's scopes ({', '.join(principal.scopes)}) do not include the {self.name} surface"
        return await self.targets.admit(principal, self.target)

    def has(self, name: str) -> bool:
        return name in self.targets.tools(self.target)

    def server_of(self, name: str) -> str:
        exposed = self.targets.tools(self.target).get(name)
        return exposed.server if exposed is not None else ""

    def deny_call(self, principal: Principal, name: str) -> str | None:
        exposed = self.targets.tools(self.target).get(name)
        return None if exposed is None else self.targets.refusal(principal, self.target, exposed)


class _Endpoint:
    """404 for a profile or share that does not exist; otherwise the MCP session manager, with the tool calls
    it would answer in JSON taken on the direct path (direct.py) when `direct` is on."""

    def __init__(
        self, surface: ProxySurface, manager: StreamableHTTPSessionManager, *, direct: bool, stateless: bool
    ) -> None:
        self.surface = surface
        self.app = StreamableHTTPASGIApp(manager)
        self.direct = (
            DirectToolCalls(
                self.app,
                surface.server,
                ProxiedCalls(surface),
                surface.calls.recorder.metrics.direct_tool_calls.labels(surface.kind),
                stateless=stateless,
                json=True,
            )
            if direct
            else None
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        target = scope.get("path_params", {}).get("name", "")
        if not self.surface.exists(target):
            # The gate authenticated the caller and looked the name up again (Guard.authorize).
            await JSONResponse(
                {"error": "not_found", "message": f"no {self.surface.kind} named '{target}'"}, status_code=404
            )(scope, receive, send)
            return
        # A surface that stands for one server (a share, an unprefixed profile) answers as that server's
        # transport would, in SSE, so it stays transparent; so does one with an interactive server, whose
        # requests to the caller ride the call's stream, and, for a 2025-era caller, one with a server reached
        # in 2026-07-28 only, whose input-required results Jarvis asks that caller on the call's stream. The
        # others answer JSON where nothing streams.
        servers = self.surface.servers_of(target)
        host = self.surface.host
        as_json = (
            self.surface.single_server(target) is None
            and not host.interactive(servers)
            and not (_legacy_caller(scope) and host.asks_in_rounds(servers))
            and answer_as_json(scope.get("method", ""), scope.get(MESSAGES_SCOPE_KEY, []))
        )
        app = self.direct if as_json and self.direct is not None else self.app
        with answer_mode(as_json), self.surface.serving(target):
            await app(scope, receive, send)


def _legacy_caller(scope: Scope) -> bool:
    """Whether the request is a 2025-era caller's (its protocol header names no 2026-era version)."""
    version = dict(scope.get("headers") or []).get(b"mcp-protocol-version", b"").decode("latin-1")
    return version not in MODERN_PROTOCOL_VERSIONS


class DownstreamRoutes:
    def __init__(
        self,
        profiles: ProxySurface,
        shares: ProxySurface,
        sessions: SessionLedger,
        *,
        stateless: bool,
        max_body_bytes: int,
        direct: bool = True,
        browser: SignsInBrowsers | None = None,
    ) -> None:
        self.surfaces = {PROFILE: profiles, SHARE: shares}
        self.stateless, self.direct = stateless, direct
        personal = profiles.host.personal
        consents, self.consent_relay = personal.consents, personal.relay
        self.consent_routes = ConsentRoutes(consents, self.consent_relay, lambda: personal.base_url(), browser)
        self.managers = {
            kind: TrackedSessionManager(
                sessions,
                # JSON or SSE per request: see answer_mode.
                app=surface.server,
                stateless=stateless,
                json_response=cast(bool, PerRequestAnswers()),
                # Host/Origin are validated by the gate before authentication, as for the other surfaces.
                security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
                max_request_body_size=max_body_bytes,
            )
            for kind, surface in self.surfaces.items()
        }

    def routes(self) -> list[Route]:
        # A share stands for one server and always streams (see `_Endpoint`), so only profiles take the direct path.
        endpoints = {
            kind: _Endpoint(
                self.surfaces[kind],
                self.managers[kind],
                direct=self.direct and kind == PROFILE,
                stateless=self.stateless,
            )
            for kind in (PROFILE, SHARE)
        }
        return [
            Route("/mcp/profile/{name}", endpoint=endpoints[PROFILE]),
            Route("/share/{name}/mcp", endpoint=endpoints[SHARE]),
            # Where a person's browser goes to authorize Jarvis at a server, and comes back (issue 32).
            *self.consent_routes.routes(),
        ]

    def guard(self, path: str) -> Guard | None:
        """The gate's hook for paths no fixed surface owns: every profile or share path is guarded, known here or
        not, so the gate authenticates before anything is looked up (a path it let through unguarded would reach
        the endpoint with no caller at all)."""
        if found := PROFILE_PATH.match(path):
            return Guard(self.surfaces[PROFILE].targets, found.group(1))
        if found := SHARE_PATH.match(path):
            return Guard(self.surfaces[SHARE].targets, found.group(1))
        return None

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        relaying = asyncio.create_task(self.consent_relay.run()) if self.consent_relay is not None else None
        async with self.managers[PROFILE].run(), self.managers[SHARE].run():
            try:
                yield
            finally:
                if relaying is not None and self.consent_relay is not None:
                    relaying.cancel()
                    await asyncio.gather(relaying, return_exceptions=True)
                    await self.consent_relay.close()
                for surface in self.surfaces.values():
                    await surface.close()


def build_downstream(
    host: DownstreamHost,
    shares: Shares,
    calls: CallPipeline,
    settings: AggregatorSettings,
    version: str,
    sessions: SessionLedger,
    browser: SignsInBrowsers | None = None,
) -> DownstreamRoutes:
    """The profile and share surfaces of one aggregator; `sessions` tracks who owns their MCP sessions."""
    # One key for both kinds: a handle is sealed to its surface kind and target anyway.
    handles = TaskHandles.for_plane(host.registry.plane)
    profiles = ProxySurface(ProfileTargets(host), calls, version, handles)
    shared = ProxySurface(ShareTargets(host, shares), calls, version, handles)
    return DownstreamRoutes(
        profiles,
        shared,
        sessions,
        stateless=settings.stateless,
        max_body_bytes=settings.max_body_bytes,
        direct=settings.direct_tool_calls,
        browser=browser,
    )


def create_host(
    registry: RegistryGateway,
    settings: AggregatorSettings,
    usage: UsageRecorder,
    runtime: RuntimeGateway | None = None,
    serve: ASGIApp | None = None,
) -> tuple[DownstreamHost, Shares]:
    """The downstream host; container-image servers need `runtime` (the runtime service runs them); a share's tunnel
    serves `serve` (the aggregator's app)."""
    options = HostOptions(
        init_timeout=settings.downstream_init_timeout,
        call_timeout=settings.downstream_call_timeout,
        list_timeout=settings.downstream_init_timeout,
        list_wait=settings.downstream_list_wait,
        own_requests=settings.direct_tool_calls,
    )
    bind = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host  # noqa: S104 - comparing
    shown = f"[{bind}]" if ":" in bind else bind
    shares = Shares(
        registry, usage, f"http://{shown}:{settings.port}", Tunnels(settings.tunnel_dir.expanduser(), serve)
    )
    host = DownstreamHost(
        registry,
        options,
        project_root=settings.project_root,
        max_message_bytes=settings.downstream_max_message_bytes,
        watch_seconds=settings.downstream_watch_seconds,
        runtime=runtime,
        vault=VaultGateway(settings.registry_target, registry.plane) if settings.registry_target else None,
        public_url=shares.base_url,  # where people's browsers come back after consent (auth/consent.py)
        redis_url=settings.redis_url,
    )
    return host, shares
