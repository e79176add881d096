"""One HTTP/1.1 connection to a streamable-HTTP server, parsed by llhttp as the answer arrives, and the
server-sent events of an answer that streams (http_calls.py sends Jarvis's own requests over them)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import httptools


class ConnectionFailed(Exception):
    """The server could not be reached, or dropped the connection before answering."""


@dataclass(frozen=True)
class Answer:
    status: int
    content_type: str
    headers: Mapping[str, str]


class Link(asyncio.Protocol):
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
        self._head: asyncio.Future[Answer] = self._loop.create_future()
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

    async def answer(self) -> Answer:
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
        answer = Answer(self._parser.get_status_code(), headers.get("content-type", "").lower(), headers)
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        self._ends_at_close = "content-length" not in headers and not chunked
        if not self._head.done():
            self._head.set_result(answer)

    def on_body(self, body: bytes) -> None:
        self._size += len(body)
        if self._size > self._max_body:
            self._fail(Oversized())
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


class Oversized(Exception):
    pass


class SseEvents:
    """Server-sent events decoded from a byte stream: each event's type and data (WHATWG's rules), and what a client
    resuming the stream needs: the last event id and the reconnection time the server set (http_calls.py resumes)."""

    def __init__(self) -> None:
        self.last_id = ""
        self.retry_ms: int | None = None
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
            elif field == "id" and "\0" not in value:
                self.last_id = value
            elif field == "retry" and value.isascii() and value.isdigit():
                self.retry_ms = int(value)

    def resumed(self) -> None:
        """A new stream continues this one: a line the old one cut off is not part of it."""
        self._pending.clear()
        self._searched = 0
        self._kind, self._data = "", []


def _line_end(buffer: bytearray, start: int, last: bool) -> tuple[int, int] | None:
    """Where the first line of `buffer` ends and the next begins (CRLF, LF or CR), or None if no line is whole yet;
    no line ends before `start`."""
    lf, cr = buffer.find(b"\n", start), buffer.find(b"\r", start)
    if cr == -1 or (lf != -1 and lf < cr):
        return None if lf == -1 else (lf, lf + 1)
    if cr + 1 == len(buffer):
        return (cr, cr + 1) if last else None  # a CR at the end may be the first half of a CRLF
    return (cr, cr + 2) if buffer[cr + 1 : cr + 2] == b"\n" else (cr, cr + 1)
