"""Bearer-token authentication and scope checks in front of every MCP surface.

Order for a request to an MCP path: Host/Origin (DNS rebinding) → body size → JSON nesting → token
→ surface scope → session ownership → open sessions per token → tool/action scope (tools/call) →
rate limits. Transport-level failures answer 421/413/400/401/403/429 before the MCP layer sees the
request; a tools/call the token may not make (or not now) is answered as a tool execution error
the agent can read, and never reaches the MCP layer either.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from jarvis.aggregator import audit
from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.jsonrpc import (
    PARSE_ERROR,
    BodyTooDeep,
    error_response,
    json_rpc_messages,
    single_request_id,
    tool_calls,
    tool_error_response,
)
from jarvis.aggregator.metrics import AggregatorMetrics
from jarvis.aggregator.ratelimit import RateLimiter
from jarvis.aggregator.sessions import SessionLedger
from jarvis.aggregator.tooling.principal import LOCAL_ADMIN, Principal, principal_from_token
from jarvis.aggregator.tooling.request import BODY_SCOPE_KEY, MESSAGES_SCOPE_KEY, PRINCIPAL_SCOPE_KEY
from jarvis.aggregator.tooling.tool import Surface
from jarvis.aggregator.usage import UsageRecorder
from jarvis.common.errors import JarvisError, Unauthenticated

REALM = 'Bearer realm="jarvis"'
SESSION_HEADER = "mcp-session-id"
# JSON-RPC server-error codes (-32000..-32099 are the implementation's own).
TOO_MANY_SESSIONS = -32001
RATE_LIMITED = -32002


class TokenVerifier:
    """Verifies secrets with the registry; caches answers for `ttl` seconds.

    The cache bounds how long a revoked token keeps working on this replica: at most `ttl`.
    Keys are SHA-256 digests, so secrets are not kept in memory longer than the request.
    """

    def __init__(self, registry: RegistryGateway, ttl: float = 5.0, max_entries: int = 10_000) -> None:
        self._registry = registry
        self._ttl = ttl
        self._max = max_entries
        self._cache: OrderedDict[str, tuple[float, Principal | None]] = OrderedDict()

    async def verify(self, secret: str) -> Principal:
        key = hashlib.sha256(secret.encode()).hexdigest()
        now = time.monotonic()
        hit = self._cache.get(key)
        if hit is not None and hit[0] > now:
            if hit[1] is None:
                raise Unauthenticated("invalid token")
            return hit[1]
        try:
            token = await self._registry.verify_token(secret)
        except Unauthenticated:
            self._remember(key, now, None)
            raise
        principal = principal_from_token(token.id, token.name, token.scopes)
        self._remember(key, now, principal)
        return principal

    def _remember(self, key: str, now: float, principal: Principal | None) -> None:
        self._cache[key] = (now + self._ttl, principal)
        self._cache.move_to_end(key)
        while len(self._cache) > self._max:
            self._cache.popitem(last=False)


@dataclass(frozen=True)
class GateSettings:
    require_auth: bool
    allowed_hosts: list[str]
    allowed_origins: list[str]
    max_body_bytes: int


class DynamicSurface(Protocol):
    """A surface on a path pattern rather than a fixed path (profiles, shares): it decides its own scopes."""

    name: str
    require_token: bool  # even on loopback

    async def authorize(self, principal: Principal) -> str | None:
        """Why `principal` may not use this surface at all (answered 403), or None."""
        ...

    def deny_call(self, principal: Principal, name: str) -> str | None:
        """Why `principal` may not call tool `name` here, naming the scopes that would allow it, or None."""
        ...

    def has(self, name: str) -> bool:
        """Whether `name` is a tool served here (as far as is known before the call)."""
        ...


@dataclass(frozen=True)
class _Call:
    tool: str  # the limiter's and audit's name for it
    denial: str | None
    arguments: dict[str, Any]
    schema: dict[str, Any] | None = None  # the tool's input schema, when known here (for the audit's redaction)
    known: bool = True  # a tool of this surface; unknown names share one rate-limit key, so they cannot mint keys

    @property
    def limit_key(self) -> str:
        return self.tool if self.known else "(unknown tool)"


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
        sessions: SessionLedger | None = None,
        limiter: RateLimiter | None = None,
        usage: UsageRecorder | None = None,
    ) -> None:
        self.app = app
        self.settings = settings
        self.verifier = verifier
        self.surfaces = surfaces
        self.dynamic = dynamic
        self.metrics = metrics
        self.host_check = TransportSecurityMiddleware(
            TransportSecuritySettings(allowed_hosts=settings.allowed_hosts, allowed_origins=settings.allowed_origins)
        )
        # None in stateless mode: there are no sessions to own.
        self.sessions = sessions
        self.limiter = limiter
        self.usage = usage

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope = trimmed(scope)
        path = scope.get("path", "").rstrip("/")
        surface = self.surfaces.get(path) if scope["type"] == "http" else None
        dynamic = self.dynamic(path) if surface is None and self.dynamic and scope["type"] == "http" else None
        if surface is None and dynamic is None:
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refusal = await self.host_check.validate_request(request, is_post=False)
        if refusal is not None:
            self.metrics.auth_failures.labels("host_or_origin").inc()
            await refusal(scope, receive, send)
            return
        body, too_big = await _read_body(receive, self.settings.max_body_bytes)
        if too_big:
            await _deny(
                self.metrics,
                "body_too_large",
                413,
                "request body too large",
                f"the limit is {self.settings.max_body_bytes} bytes",
                scope,
                receive,
                send,
            )
            return
        try:
            messages = json_rpc_messages(body)
        except BodyTooDeep as exc:
            self.metrics.auth_failures.labels("body_too_deep").inc()
            await error_response(PARSE_ERROR, str(exc), 400)(scope, receive, send)
            return
        principal, problem = await self._authenticate(request, dynamic is not None and dynamic.require_token)
        if problem == "unverifiable":
            await _deny(
                self.metrics,
                "token_unverifiable",
                503,
                "unavailable",
                "cannot verify the token: the registry is unreachable; try again shortly",
                scope,
                receive,
                send,
            )
            return
        if principal is None:
            header = REALM if problem == "missing" else f'{REALM}, error="invalid_token"'
            message = (
                (
                    "authentication required: send 'Authorization: Bearer <token>' (create one with "
                    "`jarvis token create`)"
                )
                if problem == "missing"
                else "invalid, expired or revoked token"
            )
            self.metrics.auth_failures.labels(f"token_{problem}").inc()
            await JSONResponse(
                {"error": "unauthorized", "message": message}, status_code=401, headers={"WWW-Authenticate": header}
            )(scope, receive, send)
            return
        if dynamic is not None:
            denial = await dynamic.authorize(principal)
        else:
            assert surface is not None
            denial = (
                None
                if principal.may_use_surface(surface.name)
                else f"your token's scopes ({', '.join(principal.scopes)}) do not include the {surface.name} surface"
            )
        if denial is not None:
            self.metrics.auth_failures.labels("insufficient_scope").inc()
            await JSONResponse(
                {"error": "insufficient_scope", "message": denial},
                status_code=403,
                headers={"WWW-Authenticate": f'{REALM}, error="insufficient_scope"'},
            )(scope, receive, send)
            return
        session_id = request.headers.get(SESSION_HEADER)
        if (
            session_id
            and self.sessions is not None
            and self.sessions.owner(session_id) not in (None, principal.token_id)
        ):
            await _deny(
                self.metrics,
                "session_owner",
                403,
                "forbidden",
                "this MCP session belongs to another token",
                scope,
                receive,
                send,
            )
            return
        if not session_id and self._opens_session(principal, messages):
            assert self.sessions is not None
            self.metrics.auth_failures.labels("session_limit").inc()
            await error_response(
                TOO_MANY_SESSIONS,
                f"this token already has {self.sessions.max_per_token} open "
                "MCP sessions, the most it may; end one (an HTTP DELETE with its Mcp-Session-Id, or "
                "close the client) or wait for idle ones to expire",
                429,
            )(scope, receive, send)
            return
        surface_name = surface.name if surface is not None else dynamic.name if dynamic is not None else ""
        calls = [
            self._check_call(principal, surface, dynamic, name, arguments) for name, arguments in tool_calls(messages)
        ]
        if await self._refuse_calls(principal, surface_name, calls, messages, scope, receive, send):
            return
        scope[PRINCIPAL_SCOPE_KEY] = principal
        scope[MESSAGES_SCOPE_KEY] = messages
        scope[BODY_SCOPE_KEY] = body
        keys = [(principal.token_id, surface_name, c.limit_key) for c in calls] if self._limited(principal) else []
        replayed, sending = _replay(body, receive), self._remember_session(send, principal)
        if self.limiter is not None and keys:
            with self.limiter.running(keys):
                await self.app(scope, replayed, sending)
        else:
            await self.app(scope, replayed, sending)

    def _audit(self, principal: Principal, surface: str, call: _Call, outcome: str) -> None:
        """A call refused here never reaches the MCP layer, which audits the others."""
        if self.usage is None:
            return
        action = call.arguments.get("action")
        self.usage.record(
            call.tool,
            action if isinstance(action, str) else "",
            False,
            0.0,
            audit.fields(principal, surface, call.arguments, call.schema, outcome),
        )

    def _limited(self, principal: Principal) -> bool:
        return self.limiter is not None and not principal.local

    def _opens_session(self, principal: Principal, messages: list[Any]) -> bool:
        """Whether this request would open one session too many for its token."""
        if self.sessions is None or principal.local or not self.sessions.at_limit(principal.token_id):
            return False
        return any(isinstance(m, dict) and m.get("method") == "initialize" for m in messages)

    def _check_call(
        self,
        principal: Principal,
        surface: Surface | None,
        dynamic: DynamicSurface | None,
        name: str,
        arguments: dict[str, Any],
    ) -> _Call:
        if dynamic is not None:
            return _Call(name, dynamic.deny_call(principal, name), arguments, known=dynamic.has(name))
        assert surface is not None
        if not surface.has(name):
            return _Call(name, None, arguments, known=False)  # the MCP layer answers unknown and renamed tools
        tool = surface.get(name)
        try:
            action, args = tool.resolve(arguments)
        except JarvisError:
            # Malformed arguments: let the tool answer with the precise error.
            return _Call(name, None, arguments, tool.input_schema)
        if tool.permits(principal, surface.name, action, args):
            return _Call(name, None, arguments, tool.input_schema)
        what = f"{tool.name} action={action.name}" if action else tool.name
        needed = tool.needed_scopes(surface.name, action, args)
        return _Call(
            name,
            f"your token's scopes ({', '.join(principal.scopes)}) do not allow {what}; "
            f"a token with one of these scopes may: {', '.join(needed)}",
            arguments,
            tool.input_schema,
        )

    async def _refuse_calls(
        self,
        principal: Principal,
        surface: str,
        calls: list[_Call],
        messages: list[Any],
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> bool:
        """Answer a tools/call the token may not make, or may not make now, as a tool error; True if answered.

        Refused calls never reach the MCP layer. A batch cannot be half-answered here, so a batch
        with a refused call is refused whole, at the HTTP level.
        """
        request_id = single_request_id(messages)
        for call in calls:
            if call.denial is not None:
                self.metrics.auth_failures.labels("insufficient_scope").inc()
                self._audit(principal, surface, call, "denied")
                if request_id is None:
                    await JSONResponse(
                        {"error": "insufficient_scope", "message": call.denial},
                        status_code=403,
                        headers={"WWW-Authenticate": f'{REALM}, error="insufficient_scope"'},
                    )(scope, receive, send)
                else:
                    await tool_error_response(request_id, call.denial, {"error": "insufficient_scope"})(
                        scope, receive, send
                    )
                return True
        if self.limiter is None or not self._limited(principal):
            return False
        for call in calls:
            limited = self.limiter.check(principal.token_id, surface, call.limit_key)
            if limited is None:
                continue
            self._audit(principal, surface, call, "rate_limited")
            headers = {"Retry-After": str(max(1, math.ceil(limited.retry_after)))}
            if request_id is None:
                await error_response(RATE_LIMITED, limited.message, 429)(scope, receive, send)
            else:
                await tool_error_response(request_id, limited.message, limited.detail(), headers)(scope, receive, send)
            return True
        return False

    async def _authenticate(self, request: Request, require: bool = False) -> tuple[Principal | None, str]:
        header = request.headers.get("authorization", "")
        if not header:
            return (None, "missing") if self.settings.require_auth or require else (LOCAL_ADMIN, "")
        kind, _, secret = header.partition(" ")
        if kind.lower() != "bearer" or not secret.strip():
            return None, "malformed"
        try:
            return await self.verifier.verify(secret.strip()), ""
        except Unauthenticated:
            return None, "invalid"
        except JarvisError:
            # Registry down: fail closed, but say why so an operator is not chasing a token problem.
            return None, "unverifiable"

    def _remember_session(self, send: Send, principal: Principal) -> Send:
        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                for key, value in message.get("headers", []):
                    if key.decode().lower() == SESSION_HEADER and self.sessions is not None:
                        self.sessions.opened(value.decode(), principal.token_id)
            await send(message)

        return wrapped


async def _read_body(receive: Receive, limit: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return b"", True
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks), False


def _replay(body: bytes, receive: Receive) -> Receive:
    """Hand the already-read body to the app, then the real channel (which reports disconnects)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


async def _deny(
    metrics: AggregatorMetrics,
    reason: str,
    status: int,
    error: str,
    message: str,
    scope: Scope,
    receive: Receive,
    send: Send,
) -> None:
    metrics.auth_failures.labels(reason).inc()
    response: Response = JSONResponse({"error": error, "message": message}, status_code=status)
    await response(scope, receive, send)


_OWS = b" \t"


def trimmed(scope: Scope) -> Scope:
    """`scope` with its header values stripped of surrounding whitespace, which is not part of a field value.

    RFC 9110 5.5: a parser excludes leading and trailing whitespace from a field value. h11 does; the
    httptools parser uvicorn prefers keeps it, so `Mcp-Name:  tools/call ` would not match the body's name.
    """
    headers = scope.get("headers") or []
    if all(not value or (value[0] not in _OWS and value[-1] not in _OWS) for _, value in headers):
        return scope
    return {**scope, "headers": [(key, value.strip(_OWS)) for key, value in headers]}
