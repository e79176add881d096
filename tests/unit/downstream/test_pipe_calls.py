"""Jarvis's own requests on a stdio server's pipe (downstream/transport/pipe_calls.py), against a real child process.

The server is a scripted Python process: it records every line it reads and answers each method its own way (late,
out of order, with notifications first, with errors, oversized, not at all), so each test can check what went
over the pipe and what the caller got back.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from jarvis.aggregator.downstream.transport.answers import FIRST_ID
from jarvis.aggregator.downstream.transport.pipe_calls import PipeCalls
from jarvis.aggregator.downstream.transport.stdio import StdinWriter, StdioSpec, stdio_transport

pytestmark = pytest.mark.anyio

SERVER = r"""
import json, sys, time
record = open(sys.argv[1], "a", buffering=1)
held = []

def say(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    record.write(line)
    message = json.loads(line)
    method, rid, params = message.get("method"), message.get("id"), message.get("params") or {}
    if rid is None:
        continue  # a notification (cancellations are only recorded)
    if method == "echo":
        say({"jsonrpc": "2.0", "id": rid, "result": {"echo": params, "_meta": {"kept": True}, "isError": False}})
    elif method == "swap":  # the first is answered after the second
        held.append(rid)
        if len(held) == 2:
            for waiting in reversed(held):
                say({"jsonrpc": "2.0", "id": waiting, "result": {"order": held.index(waiting)}})
            held.clear()
    elif method == "log":
        say({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "before"}})
        say({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif method == "progress":
        token = params["_meta"]["progressToken"]
        for done in (1, 2):
            say({"jsonrpc": "2.0", "method": "notifications/progress",
                 "params": {"progressToken": token, "progress": done, "total": 2, "message": f"step {done}"}})
        say({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 3, "progress": 1}})
        say({"jsonrpc": "2.0", "id": rid, "result": {"done": True}})
    elif method == "error":
        say({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "no such thing", "data": {"x": 1}}})
    elif method == "not-an-object":
        say({"jsonrpc": "2.0", "id": rid, "result": "x"})
    elif method == "big":
        say({"jsonrpc": "2.0", "id": rid, "result": {"blob": "x" * 5000}})
    elif method == "string-id":
        say({"jsonrpc": "2.0", "id": str(rid), "result": {"as": "string"}})
    elif method == "others":  # the SDK session's lines, printed while a request of Jarvis's waits
        say({"jsonrpc": "2.0", "id": 0, "result": {"sdk": True}})
        say({"jsonrpc": "2.0", "id": 9, "method": "sampling/createMessage", "params": {}})
        say({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif method == "exit":
        sys.exit(3)
    elif method == "close-stdin":  # answers, then reads no more: later lines meet a closed pipe
        say({"jsonrpc": "2.0", "id": rid, "result": {}})
        import os
        os.close(0)
        time.sleep(30)
    # "hang": never answered
"""


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[tuple[PipeCalls, Any, Path, list[tuple[str, Any]]]]:
    record = tmp_path / "received.jsonl"
    heard: list[tuple[str, Any]] = []

    async def hear(method: str, params: Any) -> None:
        heard.append((method, params))

    calls = PipeCalls(server="scripted", heard=hear)
    spec = StdioSpec("scripted", sys.executable, ("-c", SERVER, str(record)), max_message_bytes=1000)
    async with stdio_transport(spec, calls) as (read, _write, _child):
        yield calls, read, record, heard


def _received(record: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record.read_text().splitlines()]


async def _wait_for(record: Path, count: int) -> list[dict[str, Any]]:
    with anyio.fail_after(5):
        while not record.exists() or len(received := _received(record)) < count:
            await anyio.sleep(0.01)
    return received


async def test_a_request_is_one_compact_line_and_its_result_comes_back_as_sent(server: Any) -> None:
    calls, _read, record, _heard = server
    with anyio.fail_after(5):
        result = await calls.request("echo", {"a": "ü", "_meta": {"m": 1}}, 5)
    assert result == {"echo": {"a": "ü", "_meta": {"m": 1}}, "_meta": {"kept": True}, "isError": False}
    line = record.read_bytes().decode()
    assert line == f'{{"jsonrpc":"2.0","id":{FIRST_ID + 1},"method":"echo","params":{{"a":"ü","_meta":{{"m":1}}}}}}\n'


async def test_concurrent_requests_are_matched_by_id_whatever_the_order_of_answers(server: Any) -> None:
    calls, *_ = server
    results: dict[str, Any] = {}

    async def one(name: str) -> None:
        results[name] = await calls.request("swap", None, 5)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(one, "first")
            await anyio.sleep(0.05)
            tg.start_soon(one, "second")
    assert results == {"first": {"order": 0}, "second": {"order": 1}}


async def test_a_notification_printed_before_the_answer_is_relayed_before_the_request_returns(server: Any) -> None:
    calls, read, _record, heard = server
    with anyio.fail_after(5):
        await calls.request("log", None, 5)
    assert heard == [("notifications/message", {"level": "info", "data": "before"})]
    with anyio.move_on_after(0.2):
        extra = await read.receive()
        pytest.fail(f"the session got a line the request took: {extra}")


async def test_progress_carries_the_request_id_as_token_and_reports_arrive_in_order(server: Any) -> None:
    calls, read, record, _heard = server
    reports: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        reports.append((done, total, message))

    with anyio.fail_after(5):
        assert await calls.request("progress", {"x": 1}, 5, progress=progress) == {"done": True}
        foreign = await read.receive()  # another request's report is the session's
    sent = _received(record)[0]
    assert sent["params"] == {"x": 1, "_meta": {"progressToken": sent["id"]}}
    await anyio.sleep(0.05)  # relayed in tasks of their own, as the SDK's dispatcher spawns them
    assert reports == [(1.0, 2.0, "step 1"), (2.0, 2.0, "step 2")]
    assert isinstance(foreign, SessionMessage)
    assert isinstance(foreign.message, types.JSONRPCNotification)
    assert foreign.message.params == {"progressToken": 3, "progress": 1}


async def test_lines_of_the_sdk_session_reach_it_while_a_request_waits(server: Any) -> None:
    calls, read, _record, _heard = server
    with anyio.fail_after(5):
        assert await calls.request("others", None, 5) == {}
        response, request = await read.receive(), await read.receive()
    assert isinstance(response.message, types.JSONRPCResponse)
    assert response.message.id == 0
    assert isinstance(request.message, types.JSONRPCRequest)
    assert request.message.method == "sampling/createMessage"


@pytest.mark.parametrize(
    ("method", "code", "text"),
    [
        ("error", -32602, "no such thing"),
        ("not-an-object", types.PARSE_ERROR, "the result is not an object"),
        ("big", types.INTERNAL_ERROR, "larger than 1,000 bytes"),
    ],
)
async def test_errors_are_raised_as_the_sdk_raises_them(server: Any, method: str, code: int, text: str) -> None:
    calls, *_ = server
    with anyio.fail_after(5), pytest.raises(MCPError) as raised:
        await calls.request(method, None, 5)
    assert raised.value.error.code == code
    assert text in raised.value.error.message
    if method == "error":
        assert raised.value.error.data == {"x": 1}


async def test_an_id_echoed_as_a_string_still_correlates(server: Any) -> None:
    calls, *_ = server
    with anyio.fail_after(5):
        assert await calls.request("string-id", None, 5) == {"as": "string"}


async def test_a_timeout_is_the_sdks_error_and_the_server_is_told(server: Any) -> None:
    calls, _read, record, _heard = server
    with anyio.fail_after(5), pytest.raises(MCPError) as raised:
        await calls.request("hang", None, 0.2)
    assert raised.value.error.code == types.REQUEST_TIMEOUT
    request, notice = await _wait_for(record, 2)
    assert notice == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": request["id"], "reason": "timed out after 0.2s"},
    }


async def test_a_caller_that_gives_up_cancels_its_request(server: Any) -> None:
    calls, _read, record, _heard = server
    with anyio.move_on_after(0.2):
        await calls.request("hang", None, None)
    request, notice = await _wait_for(record, 2)
    assert notice["params"] == {"requestId": request["id"], "reason": "caller cancelled"}


async def test_a_server_that_exits_fails_what_waits_and_what_comes_after(server: Any) -> None:
    calls, *_ = server
    with anyio.fail_after(5):
        with pytest.raises(MCPError) as raised:
            await calls.request("exit", None, 5)
        assert raised.value.error.code == types.CONNECTION_CLOSED
        with pytest.raises(MCPError) as again:
            await calls.request("echo", None, 5)
    assert again.value.error.code == types.CONNECTION_CLOSED


async def test_the_sessions_messages_and_own_lines_reach_the_server_in_the_order_sent(tmp_path: Path) -> None:
    record = tmp_path / "received.jsonl"
    calls = PipeCalls(server="scripted", heard=lambda method, params: anyio.sleep(0))
    spec = StdioSpec("scripted", sys.executable, ("-c", SERVER, str(record)))
    async with stdio_transport(spec, calls) as (_read, write, _child):
        assert isinstance(write, StdinWriter)
        # As the handshake ends: the session's notification is sent, and a request of Jarvis's follows at once.
        await write.send(SessionMessage(types.JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized")))
        with anyio.fail_after(5):
            await calls.request("echo", None, 5)
    first, second = _received(record)
    assert first["method"] == "notifications/initialized"
    assert second["method"] == "echo"


async def test_a_pipe_the_server_closed_is_a_closed_connection(server: Any) -> None:
    calls, *_ = server

    async def until_refused() -> None:
        for _ in range(50):  # the pipe's end is seen once a write meets it
            await calls.request("echo", {"pad": "x" * 70_000}, 5)

    with anyio.fail_after(10):
        assert await calls.request("close-stdin", None, 5) == {}
        await anyio.sleep(0.2)
        with pytest.raises(MCPError) as raised:
            await until_refused()
    assert raised.value.error.code == types.CONNECTION_CLOSED


async def test_a_failing_relay_costs_its_notification_not_the_call(tmp_path: Path) -> None:
    heard: list[str] = []

    async def hear(method: str, params: Any) -> None:
        heard.append(method)
        raise RuntimeError("the caller's stream is gone")

    calls = PipeCalls(server="scripted", heard=hear)
    spec = StdioSpec("scripted", sys.executable, ("-c", SERVER, str(tmp_path / "received.jsonl")))
    async with stdio_transport(spec, calls):
        with anyio.fail_after(5):
            await calls.request("log", None, 5)
            await calls.request("log", None, 5)
    assert heard == ["notifications/message", "notifications/message"]
