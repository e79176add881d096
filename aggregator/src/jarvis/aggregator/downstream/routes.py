"""HTTP routes of the profile and share surfaces, and how the auth gate guards their dynamic paths."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from typing import cast

from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from jarvis.aggregator.direct_calls import DirectToolCalls
from jarvis.aggregator.downstream.answer_mode import PerRequestAnswers, answer_as_json, answer_mode
from jarvis.aggregator.downstream.direct import ProxiedCalls
from jarvis.aggregator.downstream.host import DownstreamHost
from jarvis.aggregator.downstream.proxy import PROFILE, SHARE, ProxySurface
from jarvis.aggregator.downstream.shares import REQUEST, Shares
from jarvis.aggregator.downstream.supervisor import HostOptions
from jarvis.aggregator.downstream.tasks import TaskHandles
from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.gateways.runtime import RuntimeGateway
from jarvis.aggregator.metrics import AggregatorMetrics
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

    def __init__(self, surface: ProxySurface, target: str) -> None:
        self.surface = surface
        self.target = target
        self.name = surface.kind
        # A share exists to hand one server to someone else: it always takes its token, even on loopback.
        self.require_token = surface.kind == SHARE

    async def authorize(self, principal: Principal) -> str | None:
        surface, target = self.surface, self.target
        if surface.kind == SHARE:
            share = await surface.shares.active(target)
            if share is None:
                return f"'{target}' is not shared (the share was stopped, expired or never started)"
            if principal.token_id != share.token_id and not principal.may(
                SHARE, target, "", read_only=False, admin=True
            ):
                return f"this token is not the token of the '{target}' share"
            surface.shares.count(share, REQUEST)
        if not surface.reaches(principal):
            return f"your token's scopes ({', '.join(principal.scopes)}) do not include the {surface.kind} surface"
        return None

    def has(self, name: str) -> bool:
        return name in self.surface.tools(self.target)

    def deny_call(self, principal: Principal, name: str) -> str | None:
        exposed = self.surface.tools(self.target).get(name)
        if exposed is None or self.surface.may_call(principal, self.target, exposed):
            return None
        return (
            f"your token's scopes ({', '.join(principal.scopes)}) do not allow {name}; a token with one of "
            f"these scopes may: {', '.join(self.surface.granting(self.target, exposed))}"
        )


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
                surface.metrics.direct_tool_calls.labels(surface.kind),
                stateless=stateless,
                json=True,
            )
            if direct
            else None
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        target = scope.get("path_params", {}).get("name", "")
        if not self.surface.exists(target):
            await self.surface.host.refresh_after_miss()  # made through another worker or replica a moment ago?
        if not self.surface.exists(target):
            # Names are not listed: this answer comes before authentication.
            await JSONResponse(
                {"error": "not_found", "message": f"no {self.surface.kind} named '{target}'"}, status_code=404
            )(scope, receive, send)
            return
        # A surface that stands for one server (a share, an unprefixed profile) answers as that server's
        # transport would, in SSE, so it stays transparent; so does one with an interactive server, whose
        # requests to the caller ride the call's stream. The others answer JSON where nothing streams.
        servers = self.surface.servers_of(target)
        as_json = (
            self.surface.single_server(target) is None
            and not self.surface.host.interactive(servers)
            and answer_as_json(scope.get("method", ""), scope.get(MESSAGES_SCOPE_KEY, []))
        )
        app = self.direct if as_json and self.direct is not None else self.app
        with answer_mode(as_json), self.surface.serving(target):
            await app(scope, receive, send)


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
    ) -> None:
        self.surfaces = {PROFILE: profiles, SHARE: shares}
        self.stateless, self.direct = stateless, direct
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
        ]

    def guard(self, path: str) -> Guard | None:
        """The gate's hook for paths no fixed surface owns."""
        if found := PROFILE_PATH.match(path):
            return (
                Guard(self.surfaces[PROFILE], found.group(1)) if self.surfaces[PROFILE].exists(found.group(1)) else None
            )
        if found := SHARE_PATH.match(path):
            return Guard(self.surfaces[SHARE], found.group(1))
        return None

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        async with self.managers[PROFILE].run(), self.managers[SHARE].run():
            yield


def build_downstream(
    host: DownstreamHost,
    shares: Shares,
    usage: UsageRecorder,
    metrics: AggregatorMetrics,
    settings: AggregatorSettings,
    version: str,
    sessions: SessionLedger,
) -> DownstreamRoutes:
    """The profile and share surfaces of one aggregator; `sessions` tracks who owns their MCP sessions."""
    # One key for both kinds: a handle is sealed to its surface kind and target anyway.
    handles = TaskHandles.for_plane(host.registry.plane)
    profiles = ProxySurface(PROFILE, host, shares, usage, metrics, version, handles)
    shared = ProxySurface(SHARE, host, shares, usage, metrics, version, handles)
    return DownstreamRoutes(
        profiles,
        shared,
        sessions,
        stateless=settings.stateless,
        max_body_bytes=settings.max_body_bytes,
        direct=settings.direct_tool_calls,
    )


def create_host(
    registry: RegistryGateway, settings: AggregatorSettings, usage: UsageRecorder, runtime: RuntimeGateway | None = None
) -> tuple[DownstreamHost, Shares]:
    """The downstream host; container-image servers need `runtime` (the runtime service runs them)."""
    options = HostOptions(
        init_timeout=settings.downstream_init_timeout,
        call_timeout=settings.downstream_call_timeout,
        list_timeout=settings.downstream_init_timeout,
        own_requests=settings.direct_tool_calls,
    )
    host = DownstreamHost(
        registry,
        options,
        project_root=settings.project_root,
        max_message_bytes=settings.downstream_max_message_bytes,
        watch_seconds=settings.downstream_watch_seconds,
        runtime=runtime,
    )
    bind = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host  # noqa: S104 - comparing
    shown = f"[{bind}]" if ":" in bind else bind
    return host, Shares(registry, usage, f"http://{shown}:{settings.port}", Tunnels(settings.tunnel_dir.expanduser()))
