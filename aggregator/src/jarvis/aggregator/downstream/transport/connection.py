"""One initialized MCP client session to a downstream server, shared by every caller of that server.

Requests go out as raw dicts and their answers come back as such: results, errors, `isError` and `_meta` pass
through exactly as the server sent them (no re-validation that could drop fields). Jarvis sends them itself where
it can (http_calls.py over HTTP, pipe_calls.py over stdio), else through the SDK's JSON-RPC dispatcher; either way
concurrent calls share the one session, progress is forwarded, and a caller that gives up cancels its request.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client.extension import NotificationBinding
from mcp.client.session import ClientSession, IncomingMessage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.dispatcher import CallOptions, ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_METHOD_HEADER, MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.message import SessionMessage
from mcp_types.version import LATEST_MODERN_VERSION, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from jarvis.aggregator.downstream.transport.addresses import refuse_forbidden_address
from jarvis.aggregator.downstream.transport.container import ContainerSpec, container_transport
from jarvis.aggregator.downstream.transport.envelope import (
    CLIENT_INFO,
    client_envelope,
    with_envelope,
    without_envelope,
)
from jarvis.aggregator.downstream.transport.handshake import handshake as open_session
from jarvis.aggregator.downstream.transport.handshake import initialize_or_exit
from jarvis.aggregator.downstream.transport.http_calls import HttpCalls, Redirected, usable_for
from jarvis.aggregator.downstream.transport.http_link import ConnectionFailed
from jarvis.aggregator.downstream.transport.pipe_calls import PipeCalls
from jarvis.aggregator.downstream.transport.relay import CallerRelay, caller_of_this_call
from jarvis.aggregator.downstream.transport.stdio import ChildProcess, StdioSpec, stdio_transport
from jarvis.aggregator.downstream.transport.watched import SUBSCRIBING, WatchedResources
from jarvis.aggregator.downstream.transport.wire import headers_for
from jarvis.aggregator.tooling.json_types import JsonObject
from jarvis.common import tracing

log = logging.getLogger(__name__)

Notice = Callable[[str, JsonObject], Awaitable[None]]  # (method, params)
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TASK_NOTICES = ("notifications/tasks", "notifications/tasks/status")  # SEP-2663's, and the 2025-era tasks' own
LISTEN = "subscriptions/listen"
_MAX_PAGES = 100  # a server whose cursor never ends cannot hang the listing
_SERVER_NOTIFICATION: TypeAdapter[types.ServerNotification] = TypeAdapter(types.ServerNotification)


@dataclass(frozen=True)
class LaunchPlan:
    """How to reach one server, resolved from its registry launch spec (env values expanded)."""

    server: str
    transport: str  # "stdio", "streamable-http" or "container"
    stdio: StdioSpec | None = None
    container: ContainerSpec | None = None
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    max_message_bytes: int = 8 * 1024 * 1024
    # Requests sent by Jarvis itself, not through the SDK's session: HTTP (http_calls.py), stdio (pipe_calls.py).
    own_requests: bool = True
    # A person's own authorization at an HTTP server (downstream/auth): made anew for each connection.
    auth: Callable[[], httpx2.Auth] | None = None


class Connection:
    """An initialized session; safe to use from any task while the `connect()` block is open."""

    def __init__(
        self,
        plan: LaunchPlan,
        dispatcher: JSONRPCDispatcher[Any],
        session: ClientSession,
        child: ChildProcess | None,
        http_calls: HttpCalls | None = None,
        pipe_calls: PipeCalls | None = None,
        *,
        may_ask: bool = False,
    ) -> None:
        self.plan = plan
        self.child = child
        self._dispatcher = dispatcher
        self._session = session
        self._http_calls = http_calls  # requests without the SDK's client (http_calls.py)
        self._pipe_calls = pipe_calls  # requests without the SDK's session, on a stdio server's pipe (pipe_calls.py)
        # The server was offered sampling and elicitation: a 2025-era answer's stream may carry its questions, which
        # only the SDK's client answers.
        self._may_ask = may_ask
        self.lost = anyio.Event()  # set when the transport closes under us (crash, network)
        # 2026-era versions the server also answers (server/discover), besides the session's own.
        self.modern_versions: tuple[str, ...] = ()
        self.watched = WatchedResources(plan.server)  # a 2026-only session's subscriptions (its listen stream's)
        # How long the server said its last tool list stays fresh (the shortest `ttlMs` of its pages); None: no hint.
        self.tools_ttl_ms: int | None = None

    @property
    def protocol_version(self) -> str:
        return self._session.protocol_version or ""

    @property
    def speaks(self) -> list[str]:
        """The versions this server is reached in: its session's (2025 handshake or 2026 discover), then the other
        2026-era ones it answers."""
        return list(dict.fromkeys([self.protocol_version, *self.modern_versions]))

    @property
    def server_info(self) -> types.Implementation | None:
        return self._session.server_info

    @property
    def capabilities(self) -> types.ServerCapabilities | None:
        return self._session.server_capabilities

    def version_for(self, caller_version: str | None) -> str:
        """The version to send a caller's request in: the caller's own when the server speaks it (a 2026-era
        request is self-describing), else the session's (the caller's answer is bridged back, versions.py)."""
        return caller_version if caller_version in self.modern_versions else self.protocol_version

    async def request(
        self,
        method: str,
        params: JsonObject | None,
        timeout: float | None,
        progress: ProgressFnT | None = None,
        *,
        version: str | None = None,
        input_schema: JsonObject | None = None,
    ) -> JsonObject:
        """A raw request; MCPError carries the server's error, a timeout or a closed connection.

        `version` (default: the session's) sets the headers the SDK session would add; HTTP servers route on them.
        """
        if method in SUBSCRIBING and not self._session.initialize_result:
            return self.watched.apply(method, params, self.capabilities)
        version = version or self.protocol_version
        if version not in MODERN_PROTOCOL_VERSIONS:
            params = without_envelope(params)
        elif not self._session.initialize_result:  # a 2026-only server: each request says who asks, and in what
            params = with_envelope(params, version)
        if self._pipe_calls is not None and method != LISTEN:
            return await self._pipe_calls.request(method, params, timeout, progress=progress)
        headers = headers_for(version, method, params, input_schema)
        # Where traced, the W3C headers name Jarvis's span, as the `_meta` Jarvis put in a call does: a server (or a
        # proxy before it) that reads the headers only sees the same trace (issue 50).
        tracing.inject(headers)
        if (
            self._http_calls is not None
            and method != LISTEN  # held open, its frames are the session's (acknowledgement, task status)
            and (version in self.modern_versions or not self._may_ask)
        ):
            try:
                return await self._http_calls.request(
                    method,
                    params,
                    headers,
                    timeout,
                    cancel_by_notice=version not in MODERN_PROTOCOL_VERSIONS,
                    progress=progress,
                )
            except ConnectionFailed as exc:
                self.lost.set()  # as the SDK's transport ends the session when a POST cannot be made
                raise MCPError(code=types.CONNECTION_CLOSED, message=f"Connection closed: {exc}") from None
            except Redirected:
                self._http_calls = None  # the SDK's client follows it (within the origin) from now on
        opts: CallOptions = {"headers": headers}
        if timeout is not None:
            opts["timeout"] = timeout
        if progress is not None:
            opts["on_progress"] = progress
        return await self._dispatcher.send_raw_request(method, params, opts)

    async def listen(self, notifications: JsonObject) -> JsonObject:
        """Hold a `subscriptions/listen` stream open (2026-07-28) until cancelled; its frames reach `on_notice`.

        Jarvis declares the tasks extension on it: a stream that names tasks is refused without it (SEP-2663).
        """
        meta = {**client_envelope(), types.CLIENT_CAPABILITIES_META_KEY: {"extensions": {TASKS_EXTENSION: {}}}}
        return await self.request(
            LISTEN, {"notifications": notifications, "_meta": meta}, None, version=LATEST_MODERN_VERSION
        )

    async def list_tools(self, timeout: float) -> list[JsonObject]:
        """Every tool the server lists, across pages, as the raw dicts it sent."""
        tools: list[JsonObject] = []
        cursor: str | None = None
        ttls: list[int] = []
        for _ in range(_MAX_PAGES):
            result = await self.request("tools/list", {"cursor": cursor} if cursor else None, timeout)
            ttl = result.get("ttlMs")
            ttls += [max(ttl, 0)] if isinstance(ttl, int) and not isinstance(ttl, bool) else []
            page = result.get("tools")
            tools += (
                [t for t in page if isinstance(t, dict) and isinstance(t.get("name"), str)]
                if isinstance(page, list)
                else []
            )
            cursor = result.get("nextCursor") if isinstance(result.get("nextCursor"), str) else None
            if not cursor:
                break
        self.tools_ttl_ms = min(ttls) if ttls else None
        return tools


@contextlib.asynccontextmanager
async def connect(
    plan: LaunchPlan,
    *,
    init_timeout: float,
    on_notification: Callable[[str], Awaitable[None]],
    relay: CallerRelay | None = None,
    on_resource_updated: Callable[[str], Awaitable[None]] | None = None,
    on_notice: Notice | None = None,
) -> AsyncIterator[Connection]:
    """Open the transport, run the initialize handshake within `init_timeout`, yield the connection.

    With a `relay` the server is offered sampling and elicitation, and its requests and log messages of a call under
    way go to the relay; a log message that came on a call's own stream goes to that call's caller (relay.py's
    `calling`). `on_resource_updated` hears the URI of each `notifications/resources/updated` (subscriptions
    are Jarvis's). `on_notice` hears the rest Jarvis relays, as the wire had them: log messages no caller's call
    took, and task status (`notifications/tasks` on a listen stream, the 2025-era `notifications/tasks/status`).
    """
    async with contextlib.AsyncExitStack() as stack:
        holder: list[Connection] = []

        async def on_message(message: IncomingMessage) -> None:
            if isinstance(message, types.LoggingMessageNotification):
                if (caller := caller_of_this_call()) is not None:
                    await caller.log(message.params)  # it came on the stream of that caller's call
                elif (relay is None or not await relay.log(message.params)) and on_notice is not None:
                    await on_notice(message.method, message.params.model_dump(by_alias=True, exclude_none=True))
            elif isinstance(message, types.ResourceUpdatedNotification) and on_resource_updated is not None:
                await on_resource_updated(message.params.uri)
            elif isinstance(message, types.ServerNotification):
                await on_notification(message.method)
            elif isinstance(message, Exception) and holder:
                holder[0].lost.set()

        async def heard(method: str, params: JsonObject | None) -> None:
            """A notification on the answer stream of a request Jarvis sent itself (http_calls.py), or printed by a
            stdio server while one waits (pipe_calls.py), routed as the SDK's client routes its own."""
            if method in TASK_NOTICES:
                if on_notice is not None:
                    await on_notice(method, params or {})
                return
            try:
                notification = _SERVER_NOTIFICATION.validate_python(
                    {"method": method} if params is None else {"method": method, "params": params}
                )
            except ValidationError:
                log.debug("server %s sent a notification %r Jarvis does not know; dropped", plan.server, method)
                return
            await on_message(notification)

        child: ChildProcess | None = None
        http_calls: HttpCalls | None = None
        read: ReadStream[SessionMessage | Exception]
        write: WriteStream[SessionMessage]
        piped = plan.stdio is not None or plan.container is not None  # a stdio stream: a child process's, a container's
        pipe_calls = PipeCalls(server=plan.server, heard=heard) if piped and plan.own_requests else None
        if plan.stdio is not None:
            read, write, child = await stack.enter_async_context(stdio_transport(plan.stdio, pipe_calls))
        elif plan.container is not None:
            read, write, child = await stack.enter_async_context(container_transport(plan.container, pipe_calls))
        else:
            await refuse_forbidden_address(plan.url)
            if plan.own_requests and usable_for(plan.url):
                http_calls = HttpCalls(
                    plan.url,
                    plan.headers,
                    server=plan.server,
                    connect_timeout=init_timeout,
                    max_message_bytes=plan.max_message_bytes,
                    heard=heard,
                )
                stack.callback(http_calls.close)
            answered = [http_calls.follow_session] if http_calls else []
            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers=plan.headers,
                    timeout=init_timeout,
                    event_hooks={"request": [_standalone_stream(holder)], "response": answered},
                    auth=plan.auth() if plan.auth is not None else None,
                )
            )
            read, write = await stack.enter_async_context(streamable_http_client(plan.url, http_client=http))
        dispatcher: JSONRPCDispatcher[Any] = JSONRPCDispatcher(read, write)

        session = ClientSession(
            dispatcher=dispatcher,
            message_handler=on_message,
            client_info=CLIENT_INFO,
            sampling_callback=relay.sampling if relay else None,
            elicitation_callback=relay.elicitation if relay else None,
            notification_bindings=_task_bindings(on_notice) if on_notice else None,
        )
        await stack.enter_async_context(session)
        connection = Connection(plan, dispatcher, session, child, http_calls, pipe_calls, may_ask=relay is not None)
        holder.append(connection)
        try:
            with anyio.fail_after(init_timeout):
                # Over HTTP every request stands alone, so a 2026-07-28 request may follow the 2025 handshake: the
                # first request asks `server/discover`. A stdio or container stream that made the handshake stays in
                # that era (the server refuses 2026 envelopes on it), so for those Jarvis always bridges: the
                # caller's request goes out in the session's version.
                if child is None:
                    versions = await open_session(session, plan.server, plan.url, dispatcher)
                else:
                    versions = await initialize_or_exit(session, child, plan.server)
        except TimeoutError:
            raise ConnectionError(
                f"did not answer initialize within {init_timeout:g} s{child.context() if child else ''}"
            ) from None
        connection.modern_versions = versions
        yield connection


class _Raw(BaseModel):
    """An extension's notification params, kept as the wire had them."""

    model_config = ConfigDict(extra="allow")


def _task_bindings(on_notice: Notice) -> list[NotificationBinding[Any]]:
    """Task status notifications are the tasks extension's, not core MCP: the SDK hands them over through bindings."""

    def binding(method: str) -> NotificationBinding[Any]:
        async def heard(params: _Raw) -> None:
            await on_notice(method, params.model_dump())

        return NotificationBinding(method=method, params_type=_Raw, handler=heard)

    return [binding(method) for method in TASK_NOTICES]


def _standalone_stream(holder: list[Connection]) -> Callable[[httpx2.Request], Awaitable[None]]:
    """Keeps the standalone GET stream, where the server's notifications outside a call arrive (`resources/updated`,
    `list_changed`), open and in the session's version.

    The SDK's transport gives the GET the client's read timeout, so a quiet server's stream ends after that long
    and, after a few retries, is never reopened. And it stamps each HTTP request with the version of the last
    message sent, while callers' 2026-07-28 requests go on this session too: a GET reopened after one would ask
    in 2026-07-28, which has no standalone stream.
    """

    async def stamp(request: httpx2.Request) -> None:
        # A listen stream is as quiet as the standalone one: it waits for what it was opened for.
        if request.method == "POST" and request.headers.get(MCP_METHOD_HEADER) == LISTEN:
            request.extensions["timeout"] = {**request.extensions.get("timeout", {}), "read": None}
        if request.method != "GET":
            return
        request.extensions["timeout"] = {**request.extensions.get("timeout", {}), "read": None}
        if holder and holder[0].protocol_version:
            request.headers[MCP_PROTOCOL_VERSION_HEADER] = holder[0].protocol_version

    return stamp
