"""`tools/call` on Jarvis's own surfaces, answered without the SDK's per-request server machinery.

Why: a tool call is most of what agents send, and the SDK spends more CPU around one than the tool
does. A 2026-07-28 request gets a connection, a runner, a dispatch context and a shielded cancel scope
of its own; with several workers a 2025-era request goes through the stateless transport, which builds a
transport, a JSON-RPC dispatcher and a server task per request. Measured with py-spy on
`jarvis_server action=list` (two workers), that machinery was about half of a worker's CPU per call.

What a call needs is small: the SDK's checks of the request, the tool, the SDK's shaping of the result.
This takes exactly the requests whose answer is a tool's result, checks them with the SDK's own
validators, runs the tool as the SDK's handler would (`Binding.run`: metrics, usage, audit), and shapes
the result as the SDK's runner does. Everything else goes to the SDK unchanged: any request a check
refuses (so every refusal is in the SDK's own words), every other method, notifications, batches,
stateful 2025 sessions (their session table is the SDK's), SSE answers, unknown tools (the alias table
answers those), and servers with middleware (an OpenTelemetry span must see every request).

Who runs the call is the surface's: Jarvis's own surfaces run their tool (`SurfaceCalls`), profiles and
shares forward it to the downstream server (`downstream/proxy/direct.py`), each through the same code the SDK's
handler calls, so metrics, usage, audit and refusals are the same on both paths.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from mcp.server import Server
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.streamable_http import check_accept_headers
from mcp.shared._otel import extract_trace_context, otel_span
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundModernRoute,
    classify_inbound_request,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
    x_mcp_header_map,
)
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp_types import (
    CORE_RESULT_TYPES,
    DEFAULT_NEGOTIATED_VERSION,
    INTERNAL_ERROR,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
    CallToolRequestParams,
    ErrorData,
    JSONRPCError,
    JSONRPCResponse,
)
from mcp_types import methods as spec_methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from opentelemetry import trace
from opentelemetry.trace import StatusCode
from prometheus_client import Counter
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from jarvis.aggregator.mcp_server import Binding
from jarvis.aggregator.tooling.request import (
    BODY_SCOPE_KEY,
    MESSAGES_SCOPE_KEY,
    decision_in,
    gated_in,
    principal_in,
)
from jarvis.aggregator.tooling.tool import Surface

log = logging.getLogger(__name__)
METHOD = "tools/call"
JSON = "application/json"


@dataclass(frozen=True)
class DirectCall:
    """A tools/call every check passed: what the tool gets and how its answer is worded."""

    request_id: str | int
    version: str
    name: str
    arguments: dict[str, Any] | None
    params: dict[str, Any]  # as the caller sent them, `_meta` included

    @property
    def modern(self) -> bool:
        return self.version in MODERN_PROTOCOL_VERSIONS


class DirectCallee(Protocol):
    """Who runs a surface's tool calls on the direct path."""

    def serves(self, scope: Scope, name: str) -> bool:
        """Whether `name` is a tool answered here; any other name goes to the SDK."""

    def input_schema(self, scope: Scope, name: str) -> Mapping[str, Any] | None:
        """Tool `name`'s input schema (only asked for a name `serves` took)."""

    async def call(self, scope: Scope, call: DirectCall) -> BaseModel | dict[str, Any]:
        """The tool's result, as the SDK's handler for the surface would return it."""


class SurfaceCalls:
    """Jarvis's own surfaces: the tool runs as `build_mcp_server`'s handler runs it."""

    def __init__(self, surface: Surface, binding: Binding) -> None:
        self.surface = surface
        self.binding = binding

    def serves(self, scope: Scope, name: str) -> bool:
        return self.surface.has(name)

    def input_schema(self, scope: Scope, name: str) -> Mapping[str, Any] | None:
        return self.surface.get(name).input_schema

    async def call(self, scope: Scope, call: DirectCall) -> BaseModel | dict[str, Any]:
        return await self.binding.run(
            self.surface.get(call.name),
            call.arguments,
            principal_in(scope),
            self.surface.name,
            decision_in(scope),
            gated=gated_in(scope),
        )


def request_span(call: DirectCall) -> AbstractContextManager[trace.Span]:
    """The span the SDK's OpenTelemetry middleware gives a tools/call (mcp.server._otel), for one taken here: named by
    method and tool, the child of the trace context in the request's `_meta` (SEP-414) or else of the ambient one."""
    attributes = {
        "mcp.method.name": METHOD,
        "mcp.protocol.version": call.version,
        "jsonrpc.request.id": str(call.request_id),
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
    }
    meta = call.params.get("_meta")
    return otel_span(
        name=f"{METHOD} {call.name}",
        kind=trace.SpanKind.SERVER,
        attributes=attributes,
        context=extract_trace_context(meta if isinstance(meta, dict) else None),
        record_exception=False,
        set_status_on_exception=False,
    )


def spanned(span: trace.Span, reply: JSONRPCResponse | JSONRPCError) -> None:
    """The request span's status, as the SDK's middleware sets it: a JSON-RPC error, or a tool's error result."""
    if isinstance(reply, JSONRPCError):
        code = str(reply.error.code)
        span.set_attributes({"error.type": code, "rpc.response.status_code": code})
        span.set_status(StatusCode.ERROR, reply.error.message)
    elif reply.result.get("isError") is True:
        span.set_attribute("error.type", "tool_error")
        span.set_status(StatusCode.ERROR)


class _RequestHeaders:
    """A 2026-07-28 request's header lines decoded once, for the routing checks that read them all.

    `lines` keeps every line (a duplicated routing header shows only there); `first` maps each name to its first
    value, as Starlette's `request.headers` answers (and `dict(request.headers)`, which the SDK hands its
    classifier), without a scan of every line per lookup. ASGI servers give header names in lower case.
    """

    def __init__(self, scope: Scope) -> None:
        self.lines = [(key.decode("latin-1"), value.decode("latin-1")) for key, value in scope["headers"]]
        self.first = dict(reversed(self.lines))


class DirectToolCalls:
    """ASGI app for one surface's path: its tool calls answered here, everything else by `sdk`."""

    def __init__(
        self,
        sdk: ASGIApp,
        server: Server[Any],
        callee: DirectCallee,
        taken: Counter,
        *,
        stateless: bool,
        json: bool,
    ) -> None:
        self.sdk = sdk
        self.server = server
        self.callee = callee
        self.taken = taken  # counts the calls answered here
        self.stateless = stateless
        # With SSE answers, or a server whose middleware or cache hints shape calls, the SDK answers.
        # The SDK's OpenTelemetry middleware (kept where traces are on) is the one this path stands in for itself.
        shaping = [m for m in server.middleware if not isinstance(m, OpenTelemetryMiddleware)]
        self.enabled = json and not shaping and METHOD not in server.cache_hints
        self.traced = len(shaping) < len(server.middleware)
        # Per tool name: the schema last seen (held, so its identity stays meaningful) and whether it declares headers.
        self._declares_headers: dict[str, tuple[Mapping[str, Any], bool]] = {}
        # The server's identity stamp, taken once: the SDK's property deep-copies it per access so that no caller
        # can alter another's; the stamp here is only ever serialized, never changed.
        self._stamp: dict[str, Any] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        call = self._taken(scope) if self.enabled else None
        if call is None:
            await self.sdk(scope, receive, send)
            return
        self.taken.inc()
        if self.traced:
            with request_span(call) as span:
                reply = await self._replied(scope, call)
                spanned(span, reply)
        else:
            reply = await self._replied(scope, call)
        await self._answer(call, reply)(scope, receive, send)

    async def _replied(self, scope: Scope, call: DirectCall) -> JSONRPCResponse | JSONRPCError:
        try:
            return self._reply(call, await self.callee.call(scope, call))
        except Exception as exc:  # as the SDK's dispatcher words a handler's exception
            error = handler_exception_to_error_data(exc)
            if error is None:
                log.exception("tool %r raised", call.name)
                error = ErrorData(code=INTERNAL_ERROR, message="Internal error")
            return JSONRPCError(jsonrpc="2.0", id=call.request_id, error=error)

    def _taken(self, scope: Scope) -> DirectCall | None:
        """The call, when this request is one to answer here; None hands it to the SDK."""
        if scope["type"] != "http" or scope["method"] != "POST":
            return None
        messages, body = scope.get(MESSAGES_SCOPE_KEY), scope.get(BODY_SCOPE_KEY)
        if not isinstance(messages, list) or len(messages) != 1 or not isinstance(body, bytes):
            return None
        if body[:64].lstrip()[:1] != b"{":  # a batch of one request is refused by the SDK
            return None
        message = messages[0]
        if not (
            isinstance(message, dict)
            and message.get("jsonrpc") == "2.0"
            and message.get("method") == METHOD
            and isinstance(message.get("params"), dict)
        ):
            return None
        request_id, params = message.get("id"), message["params"]
        if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
            return None
        if not isinstance(params.get("name"), str) or not self.callee.serves(scope, params["name"]):
            return None
        request = Request(scope)
        content_type = request.headers.get("content-type", "").split(";")[0].strip()
        if content_type != JSON or not check_accept_headers(request)[0]:
            return None
        version = self._version(request, message, params)
        if version is None:
            return None
        try:
            spec_methods.validate_client_request(METHOD, version, params)
            entry = self.server.get_request_handler(METHOD)
            typed = entry.params_type.model_validate(params, by_name=False) if entry is not None else None
        except (ValueError, KeyError):  # pydantic's ValidationError is a ValueError
            return None
        if not isinstance(typed, CallToolRequestParams):
            return None
        call = DirectCall(request_id, version, typed.name, typed.arguments, params)
        if call.modern and self._header_mismatch(scope, call, request):
            return None
        return call

    def _version(self, request: Request, message: dict[str, Any], params: dict[str, Any]) -> str | None:
        """The protocol version the SDK would serve this request at, or None where it would refuse it or
        keep state for it."""
        header = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
        if header is None or header in HANDSHAKE_PROTOCOL_VERSIONS:
            # Stateful sessions are the SDK's; a 2026 envelope on the handshake era is refused by it.
            meta = params.get("_meta")
            if not self.stateless or (isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta):
                return None
            return header or DEFAULT_NEGOTIATED_VERSION
        headers = _RequestHeaders(request.scope)
        if find_duplicated_routing_header(headers.lines) is not None:
            return None
        route = classify_inbound_request(message, headers=headers.first)
        return route.protocol_version if isinstance(route, InboundModernRoute) else None

    def _header_mismatch(self, scope: Scope, call: DirectCall, request: Request) -> bool:
        """Whether the call's Mcp-Param-* headers disagree with its arguments. Only a tool whose schema
        declares such headers can have a mismatch, so a schema is walked once, not per call."""
        schema = self.callee.input_schema(scope, call.name)
        if schema is None:  # nothing declared, nothing to mismatch
            return False
        known = self._declares_headers.get(call.name)
        if known is None or known[0] is not schema:
            known = self._declares_headers[call.name] = (schema, bool(x_mcp_header_map(schema)))
        return known[1] and validate_mcp_param_headers(schema, call.arguments or {}, request.headers) is not None

    def _reply(self, call: DirectCall, result: BaseModel | dict[str, Any]) -> JSONRPCResponse | JSONRPCError:
        """The JSON-RPC reply the SDK's runner gives for a handler's `result`."""
        try:
            return JSONRPCResponse(jsonrpc="2.0", id=call.request_id, result=self._shaped(call, result))
        except ValidationError:
            # A server bug, not the caller's: the detail stays in the log (it echoes the result).
            log.exception("tool %r returned an invalid result", call.name)
            error = ErrorData(code=INTERNAL_ERROR, message="Handler returned an invalid result")
            return JSONRPCError(jsonrpc="2.0", id=call.request_id, error=error)

    def _shaped(self, call: DirectCall, result: BaseModel | dict[str, Any]) -> dict[str, Any]:
        """`result` in the caller's protocol version, as the runner's `_serialize` makes it: sieved by the version's
        result schema (on the 2026-07-28 wire, core result types only: an extension's is its own), then
        `resultType` and the server's identity stamped on the 2026-07-28 wire."""
        if isinstance(result, BaseModel):
            dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        else:
            dumped = dict(result)
        result_type = dumped.get("resultType")
        if not call.modern or not isinstance(result_type, str) or result_type in CORE_RESULT_TYPES:
            dumped = spec_methods.serialize_server_result(METHOD, call.version, dumped)
        if call.modern:
            if dumped.get("resultType") is None:
                dumped["resultType"] = "complete"
            meta = dumped.get("_meta")
            if meta is None:
                dumped["_meta"] = {SERVER_INFO_META_KEY: self._server_info()}
            elif isinstance(meta, dict) and meta.get(SERVER_INFO_META_KEY) is None:
                dumped["_meta"] = {**meta, SERVER_INFO_META_KEY: self._server_info()}
        return dumped

    def _server_info(self) -> dict[str, Any]:
        if self._stamp is None:
            self._stamp = self.server.server_info_stamp
        return self._stamp

    @staticmethod
    def _answer(call: DirectCall, reply: JSONRPCResponse | JSONRPCError) -> Response:
        """The HTTP answer the SDK's transport gives for `reply`."""
        if not call.modern:
            # As the handshake-era transport writes it, always with status 200.
            return Response(reply.model_dump_json(by_alias=True, exclude_unset=True), media_type=JSON)
        status = ERROR_CODE_HTTP_STATUS.get(reply.error.code, 200) if isinstance(reply, JSONRPCError) else 200
        return Response(_COMPACT_JSON(_modern_body(reply)), status_code=status, media_type=JSON)


# The 2026-07-28 transport's encoding, `json.dumps(body, separators=(",", ":"))`, with its encoder built once.
_COMPACT_JSON = json.JSONEncoder(separators=(",", ":")).encode


def _modern_body(reply: JSONRPCResponse | JSONRPCError) -> dict[str, Any]:
    """`reply` as the 2026-07-28 transport dumps it: `model_dump(mode="json", by_alias=True, exclude_none=True)`.

    A result of a core type was sieved by `serialize_server_result`, which dumps in JSON mode, so it is JSON
    already and a second walk would give it back unchanged: it is taken as it is. An extension's result (passed on
    unsieved) and errors are dumped by pydantic.
    """
    if isinstance(reply, JSONRPCResponse):
        result_type = reply.result.get("resultType")
        if isinstance(result_type, str) and result_type in CORE_RESULT_TYPES:
            return {"jsonrpc": reply.jsonrpc, "id": reply.id, "result": reply.result}
    return reply.model_dump(mode="json", by_alias=True, exclude_none=True)
