"""Requests to a streamable-HTTP server, each one POST on a pooled keep-alive connection of Jarvis's own.

Why: through the SDK's client a request crosses two memory streams, a task per POST, httpx2 and httpcore, and back:
about 1 ms of a worker's CPU per proxied call, half of what Jarvis spends on it (decisions.md, "Proxied calls over
HTTP"). A request needs none of that once the session exists: its answer comes on its own POST (JSON, or an SSE
stream that ends with it). So this module sends it with asyncio and llhttp (`httptools`, which uvicorn already
uses) and reads the answer as the SDK's transport does: the same headers (with the session's `Mcp-Session-Id`,
followed from the SDK's client: a server that keeps both eras may tie what a 2026-07-28 request starts, such as a
task and its status notifications, to that session), the same errors for the same statuses, a JSON-RPC error in
a 4xx body read as such. Notifications on the answer's stream go where the SDK's would (connection.py's `heard`).

What stays on the SDK's client (connection.py decides): the handshake and the standalone GET stream, listen
streams, and 2025-era requests to a server that may ask its caller something on the answer's stream (an
interactive one: sampling, elicitation).

What differs on purpose: an answer larger than the server's `max_message_bytes` is dropped with Jarvis's
"oversized" error (as stdio answers are) instead of being read whole, and a redirect is left to the SDK's client
(`Redirected`), which follows it within the server's origin as it would have.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import re
import ssl
import time
import urllib.request
from collections.abc import Coroutine, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import httptools
import httpx2
import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from jarvis.aggregator.downstream.answers import (
    CANCELLED,
    FIRST_ID,
    PROGRESS,
    Heard,
    JsonObject,
    is_error,
    outcome,
    parsed,
    relay_progress,
    with_progress_token,
)
from jarvis.aggregator.downstream.stdio import oversized_error

log = logging.getLogger(__name__)


IDLE_SECONDS = 4.0  # an idle connection is closed before servers' usual 5 s keep-alive would close it under us
SETTLE_SECONDS = 2.0  # how long the end of an answered SSE stream is waited for before its connection is dropped
MAX_IDLE = 32  # connections kept per server; more concurrent requests open more, which then close
USER_AGENT = "jarvis"
NOTICE_SECONDS = 5.0  # how long a cancellation notice may take before it is given up
_SESSION = ("mcp-session-id", "mcp-protocol-version")  # the headers a notice keeps of its request's
_FRAMING = ("content-length", "transfer-encoding", "connection")  # the connection's own: a configured one is ignored
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110's token


class Redirected(Exception):
    """The server answered with a redirect: the SDK's client sends the request again and follows it if allowed."""


class ConnectionFailed(Exception):
    """The server could not be reached, or dropped the connection before answering."""


def usable_for(url: str) -> bool:
    """Whether requests to `url` may go this way: http(s), and no proxy from the environment applies to it (httpx2
    would use that proxy, so the SDK's client keeps such servers)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    proxies = urllib.request.getproxies()
    if not (proxies.get(parts.scheme) or proxies.get("all")):
        return True
    return bool(urllib.request.proxy_bypass(parts.hostname))


@dataclass(frozen=True)
class _Answer:
    status: int
    content_type: str
    headers: Mapping[str, str]


class _Link(asyncio.Protocol):
    """One HTTP/1.1 connection: a request written, its response parsed by llhttp as it arrives."""

    def __init__(self, max_body: int) -> None:
        self._max_body = max_body
        self._parser = httptools.HttpResponseParser(self)
        self._transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self.closed = False
        self.idle_since = 0.0
        self._begin()

    def _begin(self) -> None:
        self._head: asyncio.Future[_Answer] = self._loop.create_future()
        self._header_lines: list[tuple[bytes, bytes]] = []
        self._chunks: list[bytes] = []
        self._size = 0
        self._complete = False
        self._ends_at_close = False  # a response with neither a length nor chunks: its body ends with the connection
        self._keep_alive = False
        self._failure: BaseException | None = None
        self._wake: asyncio.Future[None] | None = None
        self.answered = False  # a byte of the response arrived: after that, the request was certainly taken

    def send(self, data: bytes) -> None:
        self._begin()
        assert self._transport is not None
        self._transport.write(data)

    async def answer(self) -> _Answer:
        return await self._head

    async def body(self) -> bytes | None:
        """The next piece of the body, or None at its end."""
        while not self._chunks:
            if self._failure is not None:
                raise self._failure
            if self._complete:
                return None
            self._wake = self._loop.create_future()
            await self._wake
        piece = b"".join(self._chunks)
        self._chunks.clear()
        return piece

    @property
    def reusable(self) -> bool:
        return self._complete and self._keep_alive and not self.closed

    def close(self) -> None:
        self.closed = True
        if self._transport is not None:
            self._transport.close()

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self.answered = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(ConnectionFailed(f"the server's HTTP answer could not be parsed: {exc}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        by_the_server, self.closed = not self.closed, True
        if not self._complete and self._ends_at_close and by_the_server and exc is None:
            # RFC 9112 6.3: such a body is whatever came before the server's close. llhttp would be told the end with
            # llhttp_finish, which httptools does not expose.
            self._complete = True
            self._poke()
        if not self._complete:
            self._fail(ConnectionFailed(f"the server closed the connection{f': {exc}' if exc else ''}"))

    # llhttp's callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_lines.append((name, value))

    def on_headers_complete(self) -> None:
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in self._header_lines}
        answer = _Answer(self._parser.get_status_code(), headers.get("content-type", "").lower(), headers)
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        self._ends_at_close = "content-length" not in headers and not chunked
        if not self._head.done():
            self._head.set_result(answer)

    def on_body(self, body: bytes) -> None:
        self._size += len(body)
        if self._size > self._max_body:
            self._fail(_Oversized())
            self.close()
            return
        self._chunks.append(body)
        self._poke()

    def on_message_complete(self) -> None:
        self._keep_alive = self._parser.should_keep_alive()  # read here: llhttp's flags are the message's
        self._complete = True
        self._poke()

    def _fail(self, failure: BaseException) -> None:
        if self._failure is None:
            self._failure = failure
        if not self._head.done():
            self._head.set_exception(failure)
            self._head.exception()  # retrieved here: a request that stopped waiting must not log it as lost
        self._poke()

    def _poke(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)


class _Oversized(Exception):
    pass


class _Events:
    """Server-sent events decoded from a byte stream: each event's type and data (WHATWG's rules, no reconnection)."""

    def __init__(self) -> None:
        self._pending = bytearray()
        self._searched = 0  # how far the pending bytes hold no line end: a long line is not searched again per piece
        self._kind = ""
        self._data: list[str] = []

    def feed(self, piece: bytes, *, last: bool = False) -> Iterator[tuple[str, str]]:
        """The events `piece` completes; `last` says the stream ends there (a CR at its end ends a line)."""
        self._pending += piece
        while True:
            end = _line_end(self._pending, self._searched, last)
            if end is None:
                self._searched = max(0, len(self._pending) - 1)
                return
            stop, after = end
            line = self._pending[:stop].decode("utf-8", errors="replace")
            del self._pending[:after]
            self._searched = 0
            if not line:
                if self._data:
                    yield self._kind or "message", "\n".join(self._data)
                self._kind, self._data = "", []
                continue
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "data":
                self._data.append(value)
            elif field == "event":
                self._kind = value


def _line_end(buffer: bytearray, start: int, last: bool) -> tuple[int, int] | None:
    """Where the first line of `buffer` ends and the next begins (CRLF, LF or CR), or None if no line is whole yet;
    no line ends before `start`."""
    lf, cr = buffer.find(b"\n", start), buffer.find(b"\r", start)
    if cr == -1 or (lf != -1 and lf < cr):
        return None if lf == -1 else (lf, lf + 1)
    if cr + 1 == len(buffer):
        return (cr, cr + 1) if last else None  # a CR at the end may be the first half of a CRLF
    return (cr, cr + 2) if buffer[cr + 1 : cr + 2] == b"\n" else (cr, cr + 1)


class HttpCalls:
    """Requests to one streamable-HTTP server on keep-alive connections, as many in parallel as callers send."""

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        *,
        server: str,
        connect_timeout: float,
        max_message_bytes: int,
        heard: Heard,
    ) -> None:
        parts = urlsplit(url)
        self._server = server
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._ssl: ssl.SSLContext | None = httpx2.create_ssl_context() if parts.scheme == "https" else None
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        authority = parts.netloc.rpartition("@")[2]
        self._fixed = {"host": authority, "user-agent": USER_AGENT}
        if parts.username is not None:  # credentials in the URL: Basic auth, as httpx2 sends them
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            self._fixed["authorization"] = "Basic " + base64.b64encode(pair).decode()
        for name, value in headers.items():
            if not _HEADER_NAME.fullmatch(name) or any(c in value for c in "\r\n\0"):
                raise ValueError(
                    f"server {server}: {name!r} is not a header Jarvis can send (a bad name or a line break)"
                )
            if name.lower() not in _FRAMING:
                self._fixed[name.lower()] = value
        # The transport's own, over any configured: the SDK's transport gives them precedence too.
        self._fixed |= {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        self._connect_timeout = connect_timeout
        self._max_body = max_message_bytes
        self._heard = heard
        self._idle: list[_Link] = []
        self._background: set[asyncio.Task[None]] = set()  # connections settling, cancellation notices
        self._next_id = FIRST_ID

    async def request(
        self,
        method: str,
        params: JsonObject | None,
        headers: Mapping[str, str],
        timeout: float | None,
        *,
        cancel_by_notice: bool = False,
        progress: ProgressFnT | None = None,
    ) -> JsonObject:
        """The result of one request; MCPError as the SDK's dispatcher would raise it, ConnectionFailed when the
        server cannot be reached, Redirected when the SDK's client should send it instead.

        A request given up (timed out, its caller cancelled) is cancelled by closing its connection, which is the
        2026-07-28 signal; `cancel_by_notice` (a 2025-era request, whose server does not read a disconnect as one)
        also sends `notifications/cancelled`, as the SDK's dispatcher does. With `progress`, the request carries its
        id as its progress token (as the SDK's dispatcher sends it) and `progress` hears each report.
        """
        self._next_id += 1
        request_id = self._next_id
        message: JsonObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if progress is not None:
            params = with_progress_token(params, request_id)
        if params is not None:
            message["params"] = params
        headers = {**self._fixed, **{name.lower(): value for name, value in headers.items()}}
        try:
            async with asyncio.timeout(timeout):
                return await self._exchange(self._post(headers, message), request_id, progress)
        except TimeoutError:
            if cancel_by_notice:
                self._cancel(request_id, f"timed out after {timeout}s", headers)
            raise MCPError(code=types.REQUEST_TIMEOUT, message=f"Request {method!r} timed out") from None
        except asyncio.CancelledError:
            if cancel_by_notice:
                self._cancel(request_id, "caller cancelled", headers)
            raise

    async def follow_session(self, request: httpx2.Request) -> None:
        """An httpx2 request hook on the SDK's client: its requests carry the session's id once the server gave one."""
        session_id = request.headers.get("mcp-session-id")
        if session_id and self._fixed.get("mcp-session-id") != session_id:
            self._fixed["mcp-session-id"] = session_id

    def close(self) -> None:
        for work in self._background:
            work.cancel()
        for link in self._idle:
            link.close()
        self._idle.clear()

    def _post(self, headers: Mapping[str, str], message: JsonObject) -> bytes:
        body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()
        lines = [f"POST {self._target} HTTP/1.1"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines.append(f"content-length: {len(body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    def _cancel(self, request_id: int, reason: str, headers: Mapping[str, str]) -> None:
        """Send `notifications/cancelled` for a request given up, in the background (its caller has moved on)."""
        notice = {"jsonrpc": "2.0", "method": CANCELLED, "params": {"requestId": request_id, "reason": reason}}
        kept = {name: value for name, value in headers.items() if not name.startswith("mcp-") or name in _SESSION}
        self._in_background(self._notify(self._post(kept, notice)))

    async def _notify(self, data: bytes) -> None:
        try:
            async with asyncio.timeout(NOTICE_SECONDS):
                await self._exchange(data, None, None)
        except (MCPError, ConnectionFailed, Redirected, TimeoutError) as exc:
            log.debug("server %s: a cancellation notice was not delivered: %s", self._server, exc)

    def _in_background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _exchange(self, data: bytes, request_id: int | None, progress: ProgressFnT | None) -> JsonObject:
        link, reused = await self._link()
        answered = False
        try:
            link.send(data)
            try:
                answer = await link.answer()
            except ConnectionFailed:
                if not (reused and not link.answered):
                    raise
                # The server closed an idle connection as the request went out: it never read it. Once more, anew.
                link.close()
                link, reused = await self._link(fresh=True)
                link.send(data)
                answer = await link.answer()
            result = await self._read(link, answer, request_id, progress)
            answered = True
            return result
        except _Oversized:
            raise MCPError.from_error_data(oversized_error(self._server, self._max_body)) from None
        finally:
            # A connection whose request was not answered is closed: for a 2026-07-28 request that is also how a
            # client that gives up (a cancelled caller, a timeout) cancels it. One answered before its stream ended
            # (an SSE stream's last event comes just before its end) is kept once the end arrives.
            if link.reusable:
                self._keep(link)
            elif answered and not link.closed:
                self._in_background(self._settle(link))
            else:
                link.close()

    def _keep(self, link: _Link) -> None:
        if len(self._idle) < MAX_IDLE:
            link.idle_since = time.monotonic()
            self._idle.append(link)
        else:
            link.close()

    async def _settle(self, link: _Link) -> None:
        """Read what is left of an answered stream, then keep its connection."""
        try:
            async with asyncio.timeout(SETTLE_SECONDS):
                while await link.body() is not None:
                    pass
        except (TimeoutError, ConnectionFailed, _Oversized):
            link.close()
            return
        if link.reusable:
            self._keep(link)
        else:
            link.close()

    async def _link(self, *, fresh: bool = False) -> tuple[_Link, bool]:
        now = time.monotonic()
        while self._idle and not fresh:
            link = self._idle.pop()
            if not link.closed and now - link.idle_since < IDLE_SECONDS:
                return link, True
            link.close()
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._connect_timeout):
                _, link = await loop.create_connection(
                    lambda: _Link(self._max_body),
                    self._host,
                    self._port,
                    ssl=self._ssl,
                    server_hostname=self._host if self._ssl else None,
                )
        except (OSError, TimeoutError) as exc:
            raise ConnectionFailed(f"could not connect to {self._host}:{self._port}: {exc or 'timed out'}") from None
        return link, False

    async def _read(
        self, link: _Link, answer: _Answer, request_id: int | None, progress: ProgressFnT | None
    ) -> JsonObject:
        if 300 <= answer.status < 400 and "location" in answer.headers:
            raise Redirected(answer.headers["location"])
        if answer.status == 202 and request_id is not None:
            raise MCPError(code=types.INVALID_REQUEST, message="server answered a request with 202 Accepted")
        if answer.status >= 400:
            raise await self._refusal(link, answer)
        if request_id is None:  # a notification's answer says nothing more (202, normally)
            await _whole(link)
            return {}
        if answer.content_type.startswith("application/json"):
            return outcome(parsed(await _whole(link)), request_id)
        if answer.content_type.startswith("text/event-stream"):
            return await self._stream(link, request_id, progress)
        raise MCPError(code=types.INVALID_REQUEST, message=f"Unexpected content type: {answer.content_type}")

    async def _refusal(self, link: _Link, answer: _Answer) -> MCPError:
        """The error for a 4xx/5xx answer: the JSON-RPC error in its body if it holds one, else the status's."""
        if answer.content_type.startswith("application/json"):
            with contextlib.suppress(ValueError, ConnectionFailed):
                error = json.loads(await _whole(link)).get("error")
                if is_error(error):
                    return MCPError(code=error["code"], message=error["message"], data=error.get("data"))
        if answer.status == 404:
            if "mcp-session-id" in self._fixed:
                return MCPError(code=types.INVALID_REQUEST, message="Session terminated")
            return MCPError(code=types.METHOD_NOT_FOUND, message="Not Found")
        return MCPError(code=types.INTERNAL_ERROR, message="Server returned an error response")

    async def _stream(self, link: _Link, request_id: int, progress: ProgressFnT | None) -> JsonObject:
        events = _Events()
        while True:
            piece = await link.body()
            for kind, data in events.feed(piece or b"", last=piece is None):
                if kind != "message" or not data:
                    continue  # a priming event (an id and no data), or a kind MCP does not define
                message = parsed(data)
                if "id" in message and ("result" in message or "error" in message):
                    return outcome(message, request_id)
                if "method" in message and "id" not in message:
                    params = message.get("params")
                    if message["method"] == PROGRESS:
                        await relay_progress(self._server, params, request_id, progress)
                    else:
                        await self._heard(message["method"], params if isinstance(params, dict) else None)
                else:
                    log.debug("server %s sent %r on a 2026-07-28 request's stream; ignored", self._server, data)
            if piece is None:
                break
        raise MCPError(code=types.CONNECTION_CLOSED, message="SSE stream ended without a response")


async def _whole(link: _Link) -> str:
    pieces: list[bytes] = []
    while (piece := await link.body()) is not None:
        pieces.append(piece)
    return b"".join(pieces).decode("utf-8", errors="replace")
