"""A lean MCP load generator: the SDK's client opens the session, raw keep-alive sockets replay its request.

With the SDK's own client driving 16 sessions, the client processes took about as much CPU as the server
measured, on the same two cores, so figures measured the client as much as the server. Here the SDK
client makes the first call (the initialize handshake and `notifications/initialized` for 2025-11-25, or
a 2026-07-28 request with its `_meta` and `Mcp-*` headers), the exact bytes it sent are captured, and each
simulated client replays them on its own HTTP/1.1 keep-alive connection with a fresh JSON-RPC id. Every
answer is parsed (JSON or SSE) and checked: the right id, a result, not a tool error.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client


@dataclass(frozen=True)
class CapturedCall:
    """A tools/call as the SDK client sent it: where, which headers, which JSON-RPC body."""

    host: str
    port: int
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    def _head(self) -> bytes:
        lines = [f"POST {self.path} HTTP/1.1", f"host: {self.host}:{self.port}"]
        lines += [f"{k}: {v}" for k, v in self.headers.items()]
        return ("\r\n".join(lines) + "\r\n").encode()

    def template(self) -> RequestTemplate:
        """The request's bytes with its id left open, so a call costs a few concatenations, not a JSON dump."""
        marker = "\x00id\x00"
        content = json.dumps({**self.body, "id": marker}, separators=(",", ":"))
        before, after = content.split(json.dumps(marker))
        return RequestTemplate(self._head(), before.encode(), after.encode())


@dataclass(frozen=True)
class RequestTemplate:
    head: bytes
    before_id: bytes
    after_id: bytes

    def render(self, request_id: int) -> bytes:
        content = self.before_id + str(request_id).encode() + self.after_id
        return self.head + b"content-length: " + str(len(content)).encode() + b"\r\n\r\n" + content


_DROPPED_HEADERS = {"host", "content-length", "connection", "accept-encoding"}


@asynccontextmanager
async def captured_call(url: str, tool: str, arguments: dict[str, Any], mode: str) -> AsyncIterator[CapturedCall]:
    """Open an SDK session on `url`, make one call of `tool`, and yield its request while the session lives."""
    sent: list[httpx2.Request] = []

    async def keep(request: httpx2.Request) -> None:
        sent.append(request)

    async with (
        httpx2.AsyncClient(timeout=60, event_hooks={"request": [keep]}) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        result = await client.call_tool(tool, arguments)
        if result.is_error:
            raise RuntimeError(f"{tool} failed before the load: {result.content}")
        call = next(r for r in reversed(sent) if r.method == "POST" and b'"tools/call"' in r.content)
        parts = urlsplit(str(call.url))
        headers = {k: v for k, v in call.headers.items() if k.lower() not in _DROPPED_HEADERS}
        yield CapturedCall(
            parts.hostname or "127.0.0.1", parts.port or 80, parts.path, headers, json.loads(call.content)
        )


class _Exchange(asyncio.Protocol):
    """One keep-alive connection, one request in flight: `ask` writes it and waits for the whole answer.

    A protocol rather than asyncio's streams: the client shares the cores with the servers it measures,
    and the streams cost about twice the CPU per exchange."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.waiting: asyncio.Future[tuple[int, bytes]] | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        answer = _complete_response(self.buffer)
        if answer is not None and self.waiting is not None and not self.waiting.done():
            self.buffer.clear()
            self.waiting.set_result(answer)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.waiting is not None and not self.waiting.done():
            self.waiting.set_exception(exc or ConnectionError("the server closed the connection"))

    async def ask(self, request: bytes) -> tuple[int, bytes]:
        assert self.transport is not None
        self.waiting = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return await self.waiting


def _complete_response(data: bytearray) -> tuple[int, bytes] | None:
    """(status, body) once `data` holds a whole HTTP/1.1 response (sized, or chunked as an SSE answer is)."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = bytes(data[:end]).lower()
    status = int(head.split(b" ", 2)[1])
    start = end + 4
    length_at = head.find(b"\r\ncontent-length:")
    if length_at >= 0:
        length = int(head[length_at + 17 :].split(b"\r\n", 1)[0])
        return (status, bytes(data[start : start + length])) if len(data) >= start + length else None
    body, at = b"", start  # chunked: an SSE answer to a POST ends its stream after the response
    while True:
        line_end = data.find(b"\r\n", at)
        if line_end < 0:
            return None
        size = int(data[at:line_end], 16)
        if size == 0:
            return (status, body) if len(data) >= line_end + 4 else None
        if len(data) < line_end + 2 + size + 2:
            return None
        body += data[line_end + 2 : line_end + 2 + size]
        at = line_end + 2 + size + 2


def _message(body: bytes) -> dict[str, Any]:
    if body.lstrip().startswith(b"{"):
        return dict(json.loads(body))
    for line in body.splitlines():
        if line.startswith(b"data:") and (b'"result"' in line or b'"error"' in line):
            return dict(json.loads(line[5:]))
    raise ValueError(f"no JSON-RPC answer in {body[:200]!r}")


def _check(status: int, body: bytes, request_id: int) -> bool:
    """Whether the answer is this request's successful result."""
    if status != 200:
        return False
    message = _message(body)
    return message.get("id") == request_id and "result" in message and not message["result"].get("isError")


async def replay(calls_of: list[CapturedCall], calls: int, warmup: int = 10) -> tuple[list[float], float, int]:
    """One connection per captured session, each sending `calls` requests one after another.

    Returns the latencies (ms), the seconds the measured part took, and how many answers were wrong.
    """
    latencies: list[float] = []
    errors = 0
    barrier = asyncio.Barrier(len(calls_of) + 1)

    async def one(index: int, call: CapturedCall) -> None:
        nonlocal errors
        transport, exchange = await asyncio.get_running_loop().create_connection(_Exchange, call.host, call.port)
        template = call.template()
        request_id = index * 1_000_000
        try:
            for n in range(warmup + calls):
                if n == warmup:
                    await barrier.wait()
                request_id += 1
                started = time.perf_counter()
                status, body = await exchange.ask(template.render(request_id))
                if n >= warmup:
                    latencies.append((time.perf_counter() - started) * 1000)
                    errors += not _check(status, body, request_id)
        finally:
            transport.close()

    tasks = [asyncio.create_task(one(i, call)) for i, call in enumerate(calls_of)]
    await barrier.wait()
    started = time.perf_counter()
    await asyncio.gather(*tasks)
    return latencies, time.perf_counter() - started, errors
