"""Bearer-token authentication and scope checks in front of every MCP surface.

Order for a request to an MCP path: Host/Origin (DNS rebinding) → body size → token → surface
scope → tool/action scope (tools/call) → session ownership. Failures answer 421/403/413/401/403
before the MCP layer sees the request.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from jarvis.aggregator.mcp_server import MESSAGES_SCOPE_KEY, PRINCIPAL_SCOPE_KEY
from jarvis.aggregator.metrics import AggregatorMetrics
from jarvis.aggregator.principal import LOCAL_ADMIN, Principal, principal_from_token
from jarvis.aggregator.registry_client import RegistryClient
from jarvis.aggregator.surfaces.base import Surface
from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.common.errors import JarvisError, Unauthenticated

REALM = 'Bearer realm="jarvis"'
SESSION_HEADER = "mcp-session-id"


class TokenVerifier:
    """Verifies secrets with the registry; caches answers for `ttl` seconds.

    The cache bounds how long a revoked token keeps working on this replica: at most `ttl`.
    Keys are SHA-256 digests, so secrets are not kept in memory longer than the request.
    """

    def __init__(self, registry: RegistryClient, ttl: float = 5.0, max_entries: int = 10_000) -> None:
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
            token = await self._registry.call(self._registry.registry.VerifyToken, pb.VerifyTokenRequest(secret=secret))
        except Unauthenticated:
            self._remember(key, now, None)
            raise
        principal = principal_from_token(token.id, token.name, list(token.scopes))
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

    async def authorize(self, principal: Principal, calls: list[tuple[str, dict[str, Any]]]) -> str | None: ...


class McpGate:
    """ASGI middleware guarding the MCP paths (everything else passes through)."""

    def __init__(self, app: ASGIApp, settings: GateSettings, verifier: TokenVerifier,
                 surfaces: dict[str, Surface], metrics: AggregatorMetrics,
                 dynamic: Callable[[str], DynamicSurface | None] | None = None) -> None:
        self.app = app
        self.settings = settings
        self.verifier = verifier
        self.surfaces = surfaces
        self.dynamic = dynamic
        self.metrics = metrics
        self.host_check = TransportSecurityMiddleware(
            TransportSecuritySettings(allowed_hosts=settings.allowed_hosts, allowed_origins=settings.allowed_origins)
        )
        self._session_owner: OrderedDict[str, str] = OrderedDict()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
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
            await _deny(self.metrics, "body_too_large", 413, "request body too large",
                        f"the limit is {self.settings.max_body_bytes} bytes", scope, receive, send)
            return
        messages = json_rpc_messages(body)
        principal, problem = await self._authenticate(request, dynamic is not None and dynamic.require_token)
        if problem == "unverifiable":
            await _deny(self.metrics, "token_unverifiable", 503, "unavailable",
                        "cannot verify the token: the registry is unreachable; try again shortly",
                        scope, receive, send)
            return
        if principal is None:
            header = REALM if problem == "missing" else f'{REALM}, error="invalid_token"'
            message = ("authentication required: send 'Authorization: Bearer <token>' (create one with "
                       "`jarvis token create`)") if problem == "missing" else "invalid, expired or revoked token"
            self.metrics.auth_failures.labels(f"token_{problem}").inc()
            await JSONResponse({"error": "unauthorized", "message": message}, status_code=401,
                               headers={"WWW-Authenticate": header})(scope, receive, send)
            return
        if dynamic is not None:
            denial = await dynamic.authorize(principal, _tool_calls(messages))
        else:
            assert surface is not None
            denial = self._authorize(principal, surface, messages)
        if denial is not None:
            self.metrics.auth_failures.labels("insufficient_scope").inc()
            await JSONResponse({"error": "insufficient_scope", "message": denial}, status_code=403,
                               headers={"WWW-Authenticate": f'{REALM}, error="insufficient_scope"'},
                               )(scope, receive, send)
            return
        session_id = request.headers.get(SESSION_HEADER)
        if session_id and self._session_owner.get(session_id, principal.token_id) != principal.token_id:
            await _deny(self.metrics, "session_owner", 403, "forbidden",
                        "this MCP session belongs to another token", scope, receive, send)
            return
        scope[PRINCIPAL_SCOPE_KEY] = principal
        scope[MESSAGES_SCOPE_KEY] = messages
        await self.app(scope, _replay(body, receive), self._remember_session(send, principal))

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

    def _authorize(self, principal: Principal, surface: Surface, messages: list[Any]) -> str | None:
        if not principal.may_use_surface(surface.name):
            return f"your token's scopes ({', '.join(principal.scopes)}) do not include the {surface.name} surface"
        for name, arguments in _tool_calls(messages):
            if not surface.has(name):
                continue  # the MCP layer answers unknown and renamed tools
            tool = surface.get(name)
            try:
                action, args = tool.resolve(arguments)
            except JarvisError:
                continue  # malformed arguments: let the tool answer with the precise error
            if not tool.permits(principal, surface.name, action, args):
                what = f"{tool.name} action={action.name}" if action else tool.name
                return f"your token's scopes ({', '.join(principal.scopes)}) do not allow {what}"
        return None

    def _remember_session(self, send: Send, principal: Principal) -> Send:
        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                for key, value in message.get("headers", []):
                    if key.decode().lower() == SESSION_HEADER:
                        self._session_owner.setdefault(value.decode(), principal.token_id)
                        while len(self._session_owner) > 20_000:
                            self._session_owner.popitem(last=False)
            await send(message)
        return wrapped


def json_rpc_messages(body: bytes) -> list[Any]:
    """The JSON-RPC messages of a request body, parsed once for every check that reads them; [] if not JSON."""
    try:
        payload = json.loads(body) if body else None
    except ValueError:
        return []
    if payload is None:
        return []
    return payload if isinstance(payload, list) else [payload]


def _tool_calls(messages: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    calls = []
    for message in messages:
        if isinstance(message, dict) and message.get("method") == "tools/call":
            params = message.get("params") or {}
            if isinstance(params, dict) and isinstance(params.get("name"), str):
                args = params.get("arguments")
                calls.append((params["name"], args if isinstance(args, dict) else {}))
    return calls


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


async def _deny(metrics: AggregatorMetrics, reason: str, status: int, error: str, message: str,
                scope: Scope, receive: Receive, send: Send) -> None:
    metrics.auth_failures.labels(reason).inc()
    response: Response = JSONResponse({"error": error, "message": message}, status_code=status)
    await response(scope, receive, send)
