"""The gate's checks, one concern each, run in order on one `GateRequest`: the first that refuses answers.

Each reads what the ones before it established (the body, the caller, the calls) and adds what it establishes, so
a request is decided once and the decision travels with it (gate.py puts it in the ASGI scope).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.types import Receive, Scope

from jarvis.aggregator.auth.targets import UNKNOWN_TOOL, CallCheck, GateTarget
from jarvis.aggregator.auth.verifier import TokenVerifier
from jarvis.aggregator.auth.wire import (
    REALM,
    SESSION_HEADER,
    Refusal,
    insufficient_scope,
    quoted,
    read_body,
    refusal,
)
from jarvis.aggregator.calls.record import OTHER_SERVER, CallRecorder
from jarvis.aggregator.jsonrpc import (
    PARSE_ERROR,
    BodyTooDeep,
    error_response,
    json_rpc_messages,
    single_request_id,
    tool_calls,
    tool_error_response,
)
from jarvis.aggregator.ratelimit import RateLimiter
from jarvis.aggregator.sessions import SessionLedger
from jarvis.aggregator.tooling.principal import LOCAL_ADMIN, Principal
from jarvis.common.errors import JarvisError, Unauthenticated

# JSON-RPC server-error codes (-32000..-32099 are the implementation's own).
TOO_MANY_SESSIONS = -32001
RATE_LIMITED = -32002


@dataclass
class GateRequest:
    """One request to an MCP path, as the gate has decided it so far."""

    scope: Scope
    receive: Receive
    target: GateTarget
    request: Request
    body: bytes = b""
    messages: list[Any] = field(default_factory=list)
    principal: Principal | None = None
    calls: list[CallCheck] = field(default_factory=list)

    @property
    def caller(self) -> Principal:
        assert self.principal is not None, "a check ran before authentication"
        return self.principal


class Check(Protocol):
    async def __call__(self, req: GateRequest) -> Refusal | None: ...


@dataclass(frozen=True)
class GateSettings:
    require_auth: bool
    allowed_hosts: list[str]
    allowed_origins: list[str]
    max_body_bytes: int


class HostAndOrigin:
    """DNS rebinding: a Host or Origin this aggregator does not serve is refused before anything else."""

    def __init__(self, settings: GateSettings) -> None:
        security = TransportSecuritySettings(
            allowed_hosts=settings.allowed_hosts, allowed_origins=settings.allowed_origins
        )
        self._check = TransportSecurityMiddleware(security)

    async def __call__(self, req: GateRequest) -> Refusal | None:
        refused = await self._check.validate_request(req.request, is_post=False)
        return Refusal(refused, "host_or_origin") if refused is not None else None


class Body:
    """The body, read whole within the size limit, and its JSON-RPC messages within the nesting limit."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes

    async def __call__(self, req: GateRequest) -> Refusal | None:
        body, too_big = await read_body(req.receive, self.max_bytes)
        if too_big:
            return refusal("body_too_large", 413, "request body too large", f"the limit is {self.max_bytes} bytes")
        try:
            req.messages = json_rpc_messages(body)
        except BodyTooDeep as exc:
            return Refusal(error_response(PARSE_ERROR, str(exc), 400), "body_too_deep")
        req.body = body
        return None


class Token:
    """Who is calling: a verified bearer token; without one, the local user on an open loopback aggregator."""

    def __init__(self, verifier: TokenVerifier, require_auth: bool) -> None:
        self.verifier = verifier
        self.require_auth = require_auth

    async def __call__(self, req: GateRequest) -> Refusal | None:
        header = req.request.headers.get("authorization", "")
        if not header:
            if self.require_auth or req.target.require_token:
                return _unauthorized("missing")
            req.principal = LOCAL_ADMIN
            return None
        kind, _, secret = header.partition(" ")
        if kind.lower() != "bearer" or not secret.strip():
            return _unauthorized("malformed")
        try:
            req.principal = await self.verifier.verify(secret.strip(), req.scope.get("path", ""))
        except Unauthenticated as exc:
            return _unauthorized("invalid", str(exc))
        except JarvisError:
            # Registry (or, for an agent's credential, the runtime) down: fail closed, but say why so an operator is
            # not chasing a token problem.
            return refusal(
                "token_unverifiable",
                503,
                "unavailable",
                "cannot verify the token: the registry (or, for an agent's credential, the runtime) is unreachable; "
                "try again shortly",
            )
        return None


def _unauthorized(problem: str, why: str = "") -> Refusal:
    if problem == "missing":
        message = (
            "authentication required: send 'Authorization: Bearer <token>' (create one with `jarvis token create`)"
        )
        header = REALM
    else:
        message = f"invalid, expired or revoked token: {why}" if why else "invalid, expired or revoked token"
        header = f'{REALM}, error="invalid_token"' + (f', error_description="{quoted(why)}"' if why else "")
    return refusal(f"token_{problem}", 401, "unauthorized", message, {"WWW-Authenticate": header})


async def surface_scope(req: GateRequest) -> Refusal | None:
    """The caller may use this surface at all (a profile or share decides for itself)."""
    denial = await req.target.admit(req.caller)
    return insufficient_scope(denial) if denial is not None else None


class Sessions:
    """An MCP session is its opener's token's alone, and a token opens a bounded number of them."""

    def __init__(self, ledger: SessionLedger) -> None:
        self.ledger = ledger

    async def __call__(self, req: GateRequest) -> Refusal | None:
        principal = req.caller
        session_id = req.request.headers.get(SESSION_HEADER)
        if session_id:
            if self.ledger.owner(session_id) in (None, principal.token_id):
                return None
            return refusal("session_owner", 403, "forbidden", "this MCP session belongs to another token")
        opens = any(isinstance(m, dict) and m.get("method") == "initialize" for m in req.messages)
        if not opens or principal.local or not self.ledger.at_limit(principal.token_id):
            return None
        message = (
            f"this token already has {self.ledger.max_per_token} open MCP sessions, the most it may; end one (an "
            "HTTP DELETE with its Mcp-Session-Id, or close the client) or wait for idle ones to expire"
        )
        return Refusal(error_response(TOO_MANY_SESSIONS, message, 429), "session_limit")


class CallScopes:
    """Each tools/call is one the token may make here. A refused call never reaches the MCP layer and is audited
    here; a batch cannot be half-answered, so a batch with a refused call is refused whole, at the HTTP level."""

    def __init__(self, recorder: CallRecorder | None) -> None:
        self.recorder = recorder

    async def __call__(self, req: GateRequest) -> Refusal | None:
        principal = req.caller
        req.calls = [req.target.check_call(principal, name, args) for name, args in tool_calls(req.messages)]
        for call in req.calls:
            if call.denial is None:
                continue
            record(self.recorder, principal, req.target.name, call, "denied")
            request_id = single_request_id(req.messages)
            if request_id is None:
                return insufficient_scope(call.denial)
            answer = tool_error_response(request_id, call.denial, {"error": "insufficient_scope"})
            return Refusal(answer, "insufficient_scope")
        return None


class RateLimits:
    """No call over its token's rate for the tool it runs (the local user is not limited)."""

    def __init__(self, limiter: RateLimiter, recorder: CallRecorder | None) -> None:
        self.limiter = limiter
        self.recorder = recorder

    async def __call__(self, req: GateRequest) -> Refusal | None:
        principal = req.caller
        if principal.local:
            return None
        for call in req.calls:
            limited = self.limiter.check(principal.token_id, req.target.name, call.limit_key)
            if limited is None:
                continue
            record(self.recorder, principal, req.target.name, call, "rate_limited")
            request_id = single_request_id(req.messages)
            if request_id is None:
                return Refusal(error_response(RATE_LIMITED, limited.message, 429))
            headers = {"Retry-After": str(max(1, math.ceil(limited.retry_after)))}
            return Refusal(tool_error_response(request_id, limited.message, limited.detail(), headers))
        return None


def record(recorder: CallRecorder | None, principal: Principal, surface: str, call: CallCheck, outcome: str) -> None:
    """Record a call refused here, as the call pipeline records the others (one record per call, either way)."""
    if recorder is None:
        return
    action = call.arguments.get("action")
    recorder.record(
        principal,
        surface,
        call.tool if call.key is not None else UNKNOWN_TOOL,  # a name that is no tool here is no metric label
        action=action if isinstance(action, str) and not call.downstream else "",
        server=call.server or (OTHER_SERVER if call.downstream else ""),
        arguments=call.arguments,
        schema=call.schema,
        outcome=outcome,
    )
