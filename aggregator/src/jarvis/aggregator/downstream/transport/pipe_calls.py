"""Requests to a stdio server that Jarvis writes on its stdin itself, their answers claimed from its stdout before the
SDK's session sees them.

Why: through the SDK's session a request is a pydantic model sent through its JSON-RPC dispatcher (a pending table
of memory streams), and every line the server prints is validated into a pydantic message and routed back through
the dispatcher's read loop: a quarter of a worker's CPU per stdio call (docs/decisions/0047-own-outbound-requests.md,
"Requests to stdio servers on Jarvis's own lines"). A request needs one line out and one line back: this module
writes `{"jsonrpc": "2.0", "id": ..., ...}` with `json`, and `claim` picks its answer out of the server's output by
id, parsed once with `json`.

The answer is read as the SDK's dispatcher reads it (answers.py): the same result dicts, the same MCPError for an
error, a timeout or a closed connection, `notifications/cancelled` when a caller gives up, progress reports checked
the same way. While such a request is under way, the notifications the server prints are routed here too (through
connection.py's `heard`, each in a task of its own as the dispatcher spawns them), so a log line the server wrote
before its answer is on its way before the answer is: the dispatcher would have ordered them the same way.

What stays the SDK's: the handshake, requests the server makes (sampling, elicitation: the SDK's session answers
them), their cancellations, and every line while none of Jarvis's own requests is waiting.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from jarvis.aggregator.downstream.transport.answers import (
    CANCELLED,
    FIRST_ID,
    PROGRESS,
    Heard,
    progress_token,
    relay_progress,
    result_of,
    with_progress_token,
)
from jarvis.aggregator.downstream.transport.stdio import StdinStream
from jarvis.aggregator.tooling.json_types import JsonObject

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Waiter:
    answer: asyncio.Future[JsonObject]
    progress: ProgressFnT | None


class PipeCalls:
    """Requests to one stdio server, as many at once as callers send, on the pipe its SDK session also uses."""

    def __init__(self, *, server: str, heard: Heard) -> None:
        self._server = server
        self._heard = heard
        self._lines: StdinStream | None = None
        self._waiting: dict[int, _Waiter] = {}
        self._next_id = FIRST_ID
        self._ended = False
        self._background: set[asyncio.Task[None]] = set()  # notifications and progress reports being relayed

    def attach(self, lines: StdinStream) -> None:
        """The server's stdin, once the process runs."""
        self._lines = lines

    async def request(
        self, method: str, params: JsonObject | None, timeout: float | None, *, progress: ProgressFnT | None = None
    ) -> JsonObject:
        """The result of one request; MCPError as the SDK's dispatcher would raise it.

        A request given up (timed out, its caller cancelled) is cancelled with `notifications/cancelled`, as the SDK's
        dispatcher does. With `progress`, the request carries its id as its progress token and `progress` hears each
        report."""
        if self._lines is None or self._ended:
            raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")
        self._next_id += 1
        request_id = self._next_id
        if progress is not None:
            params = with_progress_token(params, request_id)
        message: JsonObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        answer: asyncio.Future[JsonObject] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = _Waiter(answer, progress)
        try:
            async with asyncio.timeout(timeout):
                try:
                    await self._lines.line(_encoded(message))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed") from None
                return await answer
        except TimeoutError:
            self._cancel(request_id, f"timed out after {timeout}s")
            raise MCPError(code=types.REQUEST_TIMEOUT, message=f"Request {method!r} timed out") from None
        except asyncio.CancelledError:
            self._cancel(request_id, "caller cancelled")
            raise
        finally:
            del self._waiting[request_id]

    def claim(self, line: bytes | bytearray) -> bool:
        """Whether `line`, printed by the server, was taken here: an answer to one of these requests, a progress report
        for one, or a notification while one is waiting. The SDK's session gets the rest."""
        if not self._waiting:
            return False
        try:
            message = json.loads(line)
        except ValueError:
            return False  # the session's reader counts it as noise
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return False
        method = message.get("method")
        if method is None:
            waiter = self._waiter(message.get("id"))
            if waiter is None:
                return False  # an answer to the SDK session's own request
            _settle(waiter.answer, message)
            return True
        if not isinstance(method, str) or "id" in message or method == CANCELLED:
            return False  # a request of the server's (the session answers it), or a cancellation of one
        params = message.get("params")
        if method == PROGRESS:
            token = progress_token(params)
            if token is None or (waiter := self._waiting.get(token)) is None:
                return False  # progress of the SDK session's own request
            self._spawn(relay_progress(self._server, params, token, waiter.progress))
            return True
        self._spawn(self._contained(method, params if isinstance(params, dict) else None))
        return True

    def refuse(self, request_id: str | int, error: types.ErrorData) -> bool:
        """Whether the request `request_id` names was one of these, now answered with `error` (an oversized answer)."""
        waiter = self._waiter(request_id)
        if waiter is None:
            return False
        _fail(waiter.answer, MCPError.from_error_data(error))
        return True

    def end(self) -> None:
        """The server's output ended: what still waits fails as the SDK's dispatcher fails it."""
        self._ended = True
        for waiter in self._waiting.values():
            _fail(waiter.answer, MCPError(code=types.CONNECTION_CLOSED, message="Connection closed"))

    def _waiter(self, value: Any) -> _Waiter | None:
        request_id = _own_id(value)
        return None if request_id is None else self._waiting.get(request_id)

    def _cancel(self, request_id: int, reason: str) -> None:
        notice = {"jsonrpc": "2.0", "method": CANCELLED, "params": {"requestId": request_id, "reason": reason}}
        if self._lines is not None and not self._ended:
            self._lines.line_nowait(_encoded(notice))

    async def _contained(self, method: str, params: JsonObject | None) -> None:
        """A notification relayed; a failing relay costs that notification only, as in the SDK's dispatcher."""
        try:
            await self._heard(method, params)
        except Exception:
            log.exception("relaying %s from server %s failed", method, self._server)

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


def _encoded(message: JsonObject) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def _own_id(value: Any) -> int | None:
    """An answer's id as Jarvis's requests carry it; a peer that echoes "7" for 7 still correlates (as in the SDK)."""
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            return None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > FIRST_ID else None


def _settle(answer: asyncio.Future[JsonObject], message: JsonObject) -> None:
    if answer.done():
        return  # a second answer to the same id; the first stands
    try:
        answer.set_result(result_of(message))
    except MCPError as exc:
        _fail(answer, exc)


def _fail(answer: asyncio.Future[JsonObject], error: MCPError) -> None:
    if not answer.done():
        answer.set_exception(error)
        answer.exception()  # retrieved here: a request that stopped waiting must not log it as lost
