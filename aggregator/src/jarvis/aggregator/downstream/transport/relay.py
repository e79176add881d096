"""Requests a downstream server makes of its client during a tool call (sampling, elicitation), relayed to
the agent that made the call.

One MCP session to a server serves every caller, and a server's request says nothing of the call it
belongs to (over stdio nothing on the wire ties them). Guessing could hand one agent's prompt to
another, so relaying is opt-in per server (`servers.interactive`): Jarvis then offers the server the
sampling and elicitation capabilities, runs its tool calls one at a time, and hands each request to
the caller of the call under way, on that call's own response stream. Servers not listed see a client
without those capabilities, as before. Log messages (`notifications/message`) a server sends during a
call go the same way, so the caller sees them as it would from the server directly.

Over HTTP the wire does tie them: a server sends a call's log messages on that call's own response stream, and
the SDK's client hands them over in the context of the task that sent the request. So a log message a server
sends during a 2026-07-28 caller's call reaches that caller (`calling`), interactive server or not.
"""

from __future__ import annotations

import asyncio
import contextlib
import warnings
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

import mcp_types as types
from mcp.client.context import ClientRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

ResultT = TypeVar("ResultT", bound=BaseModel)


@dataclass(frozen=True)
class Caller:
    """The agent session a proxied tool call came from, and that call's request id; on a surface that mixes servers,
    the server called (its log messages' loggers are prefixed `<server>/`, as ServerLogs words them)."""

    session: ServerSession
    request_id: types.RequestId
    server: str | None = None

    def supports(self, capability: str) -> bool:
        declared = self.session.client_capabilities
        return declared is not None and getattr(declared, capability, None) is not None

    async def ask(self, request: types.ServerRequest, result_type: type[ResultT]) -> ResultT:
        """Send `request` on the call's own stream (the caller's reply comes back on the session)."""
        metadata = ServerMessageMetadata(related_request_id=self.request_id)
        return await self.session.send_request(request, result_type, metadata=metadata)

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        """Send a server's log message on the call's own stream."""
        logger = params.logger
        if self.server is not None:
            logger = f"{self.server}/{logger}" if logger else self.server
        # Deprecated for 2026-07-28, where the SDK sends it only to a caller that opted in on its request
        # (and at that level): exactly the filtering a relayed log line must go through.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await self.session.send_log_message(params.level, params.data, logger, related_request_id=self.request_id)


# The caller of the call the current task is making of a server (see the module's docstring).
_CALLING: ContextVar[Caller | None] = ContextVar("jarvis_calling", default=None)


@contextlib.contextmanager
def calling(caller: Caller | None) -> Iterator[None]:
    """Make what a server sends on the streams of requests sent in this block known as `caller`'s."""
    token = _CALLING.set(caller)
    try:
        yield
    finally:
        _CALLING.reset(token)


def hears_call_logs(method: str, caller_version: str | None, params: dict[str, Any] | None) -> bool:
    """Whether the caller of this request hears the log lines a server sends on the call's own stream: a 2026-07-28
    caller's call asks for them in `_meta`, and so does a 2025-era caller's that carries the level it set (logs.py)."""
    meta = (params or {}).get("_meta")
    asked = isinstance(meta, dict) and types.LOG_LEVEL_META_KEY in meta
    return method == "tools/call" and (caller_version in MODERN_PROTOCOL_VERSIONS or asked)


def caller_of_this_call() -> Caller | None:
    """The caller whose call the message being handled came with, when it came on that call's stream."""
    return _CALLING.get()


class CallerRelay:
    """One per interactive server: whose call is under way, and the lock that keeps it to one."""

    def __init__(self, server: str) -> None:
        self.server = server
        self._turn = asyncio.Lock()
        self._caller: Caller | None = None

    @contextlib.asynccontextmanager
    async def serving(self, caller: Caller | None) -> AsyncIterator[None]:
        """Hold the server for one call; requests it makes meanwhile go to `caller`."""
        async with self._turn:
            self._caller = caller
            try:
                yield
            finally:
                self._caller = None

    async def sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        caller = self._caller_for("sampling", "sampling")
        if isinstance(caller, types.ErrorData):
            return caller
        request = types.CreateMessageRequest(params=params)
        if params.tools:  # a tool-using request is answered with tool calls, a result of its own shape
            return await _relay(caller, request, types.CreateMessageResultWithTools)
        return await _relay(caller, request, types.CreateMessageResult)

    async def elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        caller = self._caller_for("elicitation", "elicitation")
        if isinstance(caller, types.ErrorData):
            return caller
        return await _relay(caller, types.ElicitRequest(params=params), types.ElicitResult)

    async def log(self, params: types.LoggingMessageNotificationParams) -> bool:
        """Relay a log message to the caller of the call under way; False with none (it is the server's own, then)."""
        caller = self._caller
        if caller is None:
            return False
        await caller.log(params)
        return True

    def _caller_for(self, what: str, capability: str) -> Caller | types.ErrorData:
        caller = self._caller
        if caller is None:
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message=(
                    f"server '{self.server}' asked for {what} outside a call Jarvis can relay it for: only tool calls "
                    "made on a profile or share surface can be asked back"
                ),
            )
        if not caller.supports(capability):
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message=(f"the client that called this tool of server '{self.server}' does not support {what}"),
            )
        if not caller.session.can_send_request:
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message=(
                    f"the call to server '{self.server}' has no stream back to its caller to carry a {what} request"
                ),
            )
        return caller


async def _relay(caller: Caller, request: types.ServerRequest, result_type: type[ResultT]) -> ResultT | types.ErrorData:
    try:
        return await caller.ask(request, result_type)
    except MCPError as exc:  # the caller's own error answer: the server sees it as the caller sent it
        return exc.error
