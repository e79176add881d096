"""Resumable streams (issue 33 item 3): a server that ends a request's SSE stream before its result, having sent
event ids and `retry`, is reconnected to after `retry` ms with a GET carrying `Last-Event-ID`, and the request
completes; a stream that cannot be resumed fails the request without the server being taken for lost."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.unit.downstream.test_http_calls import HEADERS, Reply, Seen, calls_to, respond, serving

pytestmark = pytest.mark.anyio


def cut_stream(*events: str, drop: bool = False) -> Reply:
    """An SSE answer of raw `events`, then its end (a clean chunked end, or with `drop` a dropped connection)."""

    async def reply(seen: Seen, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        for event in events:
            data = (event + "\n\n").encode()
            writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            await writer.drain()
        if drop:
            writer.transport.abort()
        else:
            writer.write(b"0\r\n\r\n")

    return reply


def result_for(first: Seen, result: dict[str, Any], event_id: str) -> str:
    return f"id: {event_id}\ndata: " + json.dumps({"jsonrpc": "2.0", "id": first.body["id"], "result": result})


@pytest.mark.parametrize("drop", [False, True], ids=["stream-ended", "connection-dropped"])
async def test_a_stream_ended_early_is_resumed_after_retry_with_last_event_id(drop: bool) -> None:
    progress = json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "half"}})

    async def resumed(seen: Seen, writer: asyncio.StreamWriter) -> None:
        await cut_stream(f"id: s1-3\ndata: {progress}", result_for(scripted.seen[0], {"ok": 1}, "s1-4"))(seen, writer)

    async with serving(cut_stream("id: s1-1\ndata:", "id: s1-2\nretry: 300", drop=drop), resumed) as scripted:
        heard: list[tuple[str, Any]] = []
        calls = calls_to(scripted, heard)
        assert await calls.request("tools/call", {"name": "echo"}, HEADERS, 5) == {"ok": 1}
        post, get = scripted.seen
        assert (post.method, get.method) == ("POST", "GET")
        assert get.head["last-event-id"] == "s1-2"
        assert get.head["mcp-protocol-version"] == "2026-07-28"
        assert get.head["authorization"] == "Bearer abc"
        assert "content-type" not in get.head
        assert get.at - post.at >= 0.3  # the server's retry, not the 1 s default nor at once
        assert get.at - post.at < 0.9
        assert heard == [("notifications/message", {"data": "half"})]
        calls.close()


async def test_a_stream_resumed_again_and_again_follows_each_last_id() -> None:
    async def second(seen: Seen, writer: asyncio.StreamWriter) -> None:
        await cut_stream("id: 2\nretry: 50")(seen, writer)

    async def third(seen: Seen, writer: asyncio.StreamWriter) -> None:
        await cut_stream(result_for(scripted.seen[0], {"n": 3}, "3"))(seen, writer)

    async with serving(cut_stream("id: 1\nretry: 50"), second, third) as scripted:
        calls = calls_to(scripted)
        assert await calls.request("tools/call", {"name": "echo"}, HEADERS, 5) == {"n": 3}
        assert [seen.head.get("last-event-id") for seen in scripted.seen] == [None, "1", "2"]
        calls.close()


async def test_a_stream_without_event_ids_is_not_resumed() -> None:
    async with serving(cut_stream("retry: 10\ndata:")) as scripted:
        calls = calls_to(scripted)
        with pytest.raises(MCPError) as raised:
            await calls.request("tools/call", {"name": "echo"}, HEADERS, 5)
        assert raised.value.error.code == types.CONNECTION_CLOSED
        assert len(scripted.seen) == 1
        calls.close()


async def test_a_refused_resumption_fails_the_request() -> None:
    async with serving(cut_stream("id: 1\nretry: 10"), respond(405, "text/plain", b"no")) as scripted:
        calls = calls_to(scripted)
        with pytest.raises(MCPError, match="could not be resumed"):
            await calls.request("tools/call", {"name": "echo"}, HEADERS, 5)
        calls.close()


async def test_resumed_streams_that_bring_nothing_new_give_up() -> None:
    async with serving(cut_stream("id: 1\nretry: 10")) as scripted:
        calls = calls_to(scripted)
        with pytest.raises(MCPError, match="without a response"):
            await calls.request("tools/call", {"name": "echo"}, HEADERS, 5)
        assert len(scripted.seen) == 4  # the POST, then three GETs that repeat id 1
        calls.close()
