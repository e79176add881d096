"""Requests to a streamable-HTTP server, each one POST on a pooled keep-alive connection of Jarvis's own.

Why: through the SDK's client a request crosses two memory streams, a task per POST, httpx2 and httpcore, and back:
about 1 ms of a worker's CPU per proxied call, half of Jarvis's (docs/decisions/0047-own-outbound-requests.md, "over
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
from collections.abc import Coroutine, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx2
import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from jarvis.aggregator.downstream.transport.answers import (
    CANCELLED,
    FIRST_ID,
    PROGRESS,
    Heard,
    is_error,
    outcome,
    parsed,
    relay_progress,
    with_progress_token,
)
from jarvis.aggregator.downstream.transport.http_link import Answer, ConnectionFailed, Link, Oversized, SseEvents
from jarvis.aggregator.downstream.transport.stdio import oversized_error
from jarvis.aggregator.tooling.json_types import JsonObject

log = logging.getLogger(__name__)


IDLE_SECONDS = 4.0  # an idle connection is closed before servers' usual 5 s keep-alive would close it under us
SETTLE_SECONDS = 2.0  # how long the end of an answered SSE stream is waited for before its connection is dropped
MAX_IDLE = 32  # connections kept per server; more concurrent requests open more, which then close
USER_AGENT = "jarvis"
NOTICE_SECONDS = 5.0  # how long a cancellation notice may take before it is given up
DEFAULT_RETRY_MS = 1000  # before resuming a stream whose server set no `retry` (the SDK's client waits as long)
MAX_FRUITLESS_RESUMES = 2  # resumed streams in a row that bring nothing new before the request fails
_SESSION = ("mcp-session-id", "mcp-protocol-version")  # the headers a notice keeps of its request's
_FRAMING = ("content-length", "transfer-encoding", "connection")  # the connection's own: a configured one is ignored
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110's token


class Redirected(Exception):
    """The server answered with a redirect: the SDK's client sends the request again and follows it if allowed."""


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
        self._idle: list[Link] = []
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
                return await self._exchange(self._post(headers, message), request_id, progress, headers)
        except TimeoutError:
            if cancel_by_notice:
                self._cancel(request_id, f"timed out after {timeout}s", headers)
            raise MCPError(code=types.REQUEST_TIMEOUT, message=f"Request {method!r} timed out") from None
        except asyncio.CancelledError:
            if cancel_by_notice:
                self._cancel(request_id, "caller cancelled", headers)
            raise

    async def follow_session(self, response: httpx2.Response) -> None:
        """An httpx2 response hook on the SDK's client: Jarvis's requests carry the session's id as the SDK's do, from
        the answer that gave it (the 2025 handshake's, before `notifications/initialized` may have gone out)."""
        handshake = response.request.headers.get("mcp-method", "initialize") == "initialize"
        given = response.headers.get("mcp-session-id") if handshake else None
        if session_id := given or response.request.headers.get("mcp-session-id"):
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

    async def _exchange(
        self,
        data: bytes,
        request_id: int | None,
        progress: ProgressFnT | None,
        headers: Mapping[str, str] | None = None,
    ) -> JsonObject:
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
            result = await self._read(link, answer, request_id, progress, headers or {})
            answered = True
            return result
        except Oversized:
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

    def _keep(self, link: Link) -> None:
        if len(self._idle) < MAX_IDLE:
            link.idle_since = time.monotonic()
            self._idle.append(link)
        else:
            link.close()

    async def _settle(self, link: Link) -> None:
        """Read what is left of an answered stream, then keep its connection."""
        try:
            async with asyncio.timeout(SETTLE_SECONDS):
                while await link.body() is not None:
                    pass
        except (TimeoutError, ConnectionFailed, Oversized):
            link.close()
            return
        if link.reusable:
            self._keep(link)
        else:
            link.close()

    async def _link(self, *, fresh: bool = False) -> tuple[Link, bool]:
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
                    lambda: Link(self._max_body),
                    self._host,
                    self._port,
                    ssl=self._ssl,
                    server_hostname=self._host if self._ssl else None,
                )
        except (OSError, TimeoutError) as exc:
            raise ConnectionFailed(f"could not connect to {self._host}:{self._port}: {exc or 'timed out'}") from None
        return link, False

    async def _read(
        self,
        link: Link,
        answer: Answer,
        request_id: int | None,
        progress: ProgressFnT | None,
        headers: Mapping[str, str],
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
            return await self._stream(link, request_id, progress, headers)
        raise MCPError(code=types.INVALID_REQUEST, message=f"Unexpected content type: {answer.content_type}")

    async def _refusal(self, link: Link, answer: Answer) -> MCPError:
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

    async def _stream(
        self, link: Link, request_id: int, progress: ProgressFnT | None, headers: Mapping[str, str]
    ) -> JsonObject:
        """The request's result from its SSE stream. A stream that ends (or whose connection drops) before the result,
        after events with ids, is resumed as the spec's resumability says: after the server's `retry` ms, a GET with
        `Last-Event-ID` continues it; only a stream that cannot be resumed fails the request."""
        events = SseEvents()
        fruitless = 0  # resumed streams in a row that brought no new event
        resumed: Link | None = None  # `link` is the POST's, which _exchange looks after; this one is ours
        answered = False
        try:
            while True:
                seen = events.last_id
                try:
                    result = await self._events(resumed or link, events, request_id, progress)
                except ConnectionFailed:
                    if not events.last_id:
                        raise
                    result = None
                if result is not None:
                    answered = True
                    return result
                fruitless = fruitless + 1 if resumed is not None and events.last_id == seen else 0
                if not events.last_id or fruitless > MAX_FRUITLESS_RESUMES:
                    raise MCPError(code=types.CONNECTION_CLOSED, message="SSE stream ended without a response")
                await asyncio.sleep((events.retry_ms if events.retry_ms is not None else DEFAULT_RETRY_MS) / 1000)
                events.resumed()
                if resumed is not None:
                    resumed.close()
                resumed = await self._resume(headers, events.last_id)
        finally:
            if resumed is not None:
                if answered and not resumed.closed:
                    self._in_background(self._settle(resumed))
                else:
                    resumed.close()

    async def _events(
        self, link: Link, events: SseEvents, request_id: int, progress: ProgressFnT | None
    ) -> JsonObject | None:
        """Read one stream of the request: its result, or None when the stream ends without it."""
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
                    log.debug("server %s sent %r on a request's stream; ignored", self._server, data)
            if piece is None:
                return None

    async def _resume(self, headers: Mapping[str, str], last_id: str) -> Link:
        """A connection carrying the stream's continuation: GET with Last-Event-ID (and the request's headers but the
        body's own), answered with an SSE stream."""
        kept = {name: value for name, value in headers.items() if name != "content-type"}
        kept["last-event-id"] = last_id
        lines = [f"GET {self._target} HTTP/1.1", *(f"{name}: {value}" for name, value in kept.items())]
        link, _ = await self._link(fresh=True)
        link.send(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        answer = await link.answer()  # ConnectionFailed: the server is gone, a real failure
        if answer.status >= 400 or not answer.content_type.startswith("text/event-stream"):
            link.close()
            refusal = f"status {answer.status}, {answer.content_type or 'no content type'}"
            raise MCPError(code=types.CONNECTION_CLOSED, message=f"SSE stream could not be resumed ({refusal})")
        return link


async def _whole(link: Link) -> str:
    pieces: list[bytes] = []
    while (piece := await link.body()) is not None:
        pieces.append(piece)
    return b"".join(pieces).decode("utf-8", errors="replace")
