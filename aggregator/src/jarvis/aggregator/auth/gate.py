"""The gate: ASGI middleware that runs every request to an MCP path through the checks, in order, and hands the
request on with its decision (the caller, the messages it read, the decided tools/call) in the ASGI scope."""

from __future__ import annotations

from collections.abc import Callable

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from jarvis.aggregator.auth.checks import (
    Body,
    CallScopes,
    Check,
    GateRequest,
    GateSettings,
    HostAndOrigin,
    RateLimits,
    Sessions,
    Token,
    surface_scope,
)
from jarvis.aggregator.auth.targets import DynamicSurface, DynamicTarget, FixedTarget, GateTarget
from jarvis.aggregator.auth.verifier import TokenVerifier
from jarvis.aggregator.auth.wire import SESSION_HEADER, replay, trimmed, with_challenge
from jarvis.aggregator.calls.record import CallRecorder
from jarvis.aggregator.metrics import AggregatorMetrics
from jarvis.aggregator.oauth.resource import ProtectedResource
from jarvis.aggregator.ratelimit import RateLimiter
from jarvis.aggregator.sessions import SessionLedger
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.request import (
    BODY_SCOPE_KEY,
    DECISION_SCOPE_KEY,
    MESSAGES_SCOPE_KEY,
    PRINCIPAL_SCOPE_KEY,
)
from jarvis.aggregator.tooling.tool import Surface
from jarvis.common import tracing


class McpGate:
    """ASGI middleware guarding the MCP paths (everything else passes through)."""

    def __init__(
        self,
        app: ASGIApp,
        settings: GateSettings,
        verifier: TokenVerifier,
        surfaces: dict[str, Surface],
        metrics: AggregatorMetrics,
        dynamic: Callable[[str], DynamicSurface | None] | None = None,
        sessions: SessionLedger | None = None,  # None in stateless mode: there are no sessions to own
        limiter: RateLimiter | None = None,
        recorder: CallRecorder | None = None,
        resource: ProtectedResource | None = None,
    ) -> None:
        self.app = app
        self.resource = resource  # None: refusals name no resource metadata
        self.fixed: dict[str, GateTarget] = {path: FixedTarget(surface) for path, surface in surfaces.items()}
        self.dynamic = dynamic
        self.metrics = metrics
        self.sessions = sessions
        self.limiter = limiter
        checks: list[Check] = [
            HostAndOrigin(settings),
            Body(settings.max_body_bytes),
            Token(verifier, settings.require_auth),
            surface_scope,
        ]
        if sessions is not None:
            checks.append(Sessions(sessions))
        checks.append(CallScopes(recorder))
        if limiter is not None:
            checks.append(RateLimits(limiter, recorder))
        self.checks = tuple(checks)

    def target(self, scope: Scope) -> GateTarget | None:
        """The surface an HTTP request's path names, fixed or on a pattern; None for any other path."""
        if scope["type"] != "http":
            return None
        path = scope.get("path", "").rstrip("/")
        fixed = self.fixed.get(path)
        if fixed is not None:
            return fixed
        dynamic = self.dynamic(path) if self.dynamic is not None else None
        return DynamicTarget(dynamic) if dynamic is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope = trimmed(scope)
        target = self.target(scope)
        if target is None:
            await self.app(scope, receive, send)
            return
        req = GateRequest(scope, receive, target, Request(scope))
        for check in self.checks:
            refused = await check(req)
            if refused is not None:
                if refused.reason is not None:
                    self.metrics.auth_failures.labels(refused.reason).inc()
                    if self.resource is not None:
                        challenge = await self.resource.challenge(scope.get("path", ""), target.name)
                        send = with_challenge(send, challenge)
                await refused.response(scope, receive, send)
                return
        principal = req.caller
        scope[PRINCIPAL_SCOPE_KEY] = principal
        scope[MESSAGES_SCOPE_KEY] = req.messages
        scope[BODY_SCOPE_KEY] = req.body
        if len(req.calls) == 1 and req.calls[0].decision is not None:
            scope[DECISION_SCOPE_KEY] = req.calls[0].decision
        replayed, sending = replay(req.body, receive), self._remember_session(send, principal)
        # A client's traceparent header, where it sent one; else the trace its agent credential was minted in.
        with tracing.incoming(scope["headers"], dict(principal.trace)):
            if self.limiter is not None and req.calls and not principal.local:
                # One pool of calls in flight per token and tool, whichever route reached the tool.
                with self.limiter.running([(principal.token_id, c.limit_key) for c in req.calls]):
                    await self.app(scope, replayed, sending)
            else:
                await self.app(scope, replayed, sending)

    def _remember_session(self, send: Send, principal: Principal) -> Send:
        if self.sessions is None:
            return send
        sessions = self.sessions

        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                for key, value in message.get("headers", []):
                    if key.decode().lower() == SESSION_HEADER:
                        sessions.opened(value.decode(), principal.token_id)
            await send(message)

        return wrapped
