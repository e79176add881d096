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

    def request_bytes(self, request_id: int) -> bytes:
        content = json.dumps({**self.body, "id": request_id}, separators=(",", ":")).encode()
        lines = [f"POST {self.path} HTTP/1.1", f"host: {self.host}:{self.port}"]
        lines += [f"{k}: {v}" for k, v in self.headers.items()]
        lines.append(f"content-length: {len(content)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + content


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


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        if b":" in line:
            key, _, value = line.partition(b":")
            headers[key.strip().lower()] = value.strip()
    if b"content-length" in headers:
        return status, await reader.readexactly(int(headers[b"content-length"]))
    body = b""  # chunked: an SSE answer to a POST ends its stream after the response
    while True:
        size = int((await reader.readuntil(b"\r\n")).strip(), 16)
        chunk = await reader.readexactly(size + 2)
        if size == 0:
            return status, body
        body += chunk[:-2]


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
        reader, writer = await asyncio.open_connection(call.host, call.port)
        request_id = index * 1_000_000
        try:
            for n in range(warmup + calls):
                if n == warmup:
                    await barrier.wait()
                request_id += 1
                started = time.perf_counter()
                writer.write(call.request_bytes(request_id))
                status, body = await _read_response(reader)
                if n >= warmup:
                    latencies.append((time.perf_counter() - started) * 1000)
                    errors += not _check(status, body, request_id)
        finally:
            writer.close()

    tasks = [asyncio.create_task(one(i, call)) for i, call in enumerate(calls_of)]
    await barrier.wait()
    started = time.perf_counter()
    await asyncio.gather(*tasks)
    return latencies, time.perf_counter() - started, errors
