"""Real downstream servers (mcp-server-time from PyPI, server-everything from npm) proxied through profile
surfaces of a real `jarvis up`: tool names, pass-through of results, errors and progress, list_changed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.support.downstream import (
    FAST_ENV,
    create_profile,
    create_server,
    create_toy,
    eventually,
    everything_server,
    mcp_session,
    text_of,
    time_server,
    whoami,
)
from tests.support.stack import RunningJarvis, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio


def comparable(result: types.CallToolResult) -> tuple[Any, ...]:
    return ([c.model_dump(mode="json") for c in result.content], result.structured_content, result.is_error)


async def test_time_server_through_a_profile_answers_like_the_server_itself(hosted: RunningJarvis) -> None:
    async with mcp_client(hosted.url()) as admin:
        await create_server(admin, "clock", [time_server()])
        await create_profile(admin, "timely", "clock")
    calls = [
        ("convert_time", {"source_timezone": "UTC", "time": "12:30", "target_timezone": "Asia/Tokyo"}),
        ("convert_time", {"source_timezone": "Mars/Olympus", "time": "12:30", "target_timezone": "UTC"}),
        ("get_current_time", {"timezone": "Not/AZone"}),
    ]
    async with Client(StdioServerParameters(command=time_server()), mode="legacy") as direct:
        direct_tools = {t.name: t for t in (await direct.list_tools()).tools}
        expected = [comparable(await direct.call_tool(name, args)) for name, args in calls]
    async with mcp_client(hosted.url("/mcp/profile/timely")) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) == {f"clock__{n}" for n in direct_tools}
        for name, tool in direct_tools.items():
            assert listed[f"clock__{name}"].input_schema == tool.input_schema
            assert listed[f"clock__{name}"].description == tool.description
        got = [comparable(await client.call_tool(f"clock__{name}", args)) for name, args in calls]
    assert got == expected
    assert expected[1][2] is True  # the server's own tool error came through as isError, text intact
    async with mcp_client(hosted.url()) as admin:
        listing = result_json(await admin.call_tool("jarvis_server", {"action": "list"}))
    clock = next(s for s in listing["servers"] if s["name"] == "clock")
    assert (clock["status"], clock["tools"]) == ("running", 2)
    assert clock["uptime_seconds"] >= 0


async def test_everything_server_tools_progress_and_errors(hosted: RunningJarvis) -> None:
    async with mcp_client(hosted.url()) as admin:
        await create_server(admin, "everything", everything_server())
        await create_profile(admin, "ev", "everything")
    updates: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    async with mcp_client(hosted.url("/mcp/profile/ev")) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"everything__echo", "everything__get-sum", "everything__trigger-long-running-operation"} <= names
        echo = await client.call_tool("everything__echo", {"message": "hello downstream"})
        summed = await client.call_tool("everything__get-sum", {"a": 2, "b": 40})
        structured = await client.call_tool("everything__get-structured-content", {"location": "New York"})
        await client.call_tool(
            "everything__trigger-long-running-operation", {"duration": 1, "steps": 3}, progress_callback=on_progress
        )
        invalid = await client.call_tool("everything__get-sum", {"a": "two"})
    assert "hello downstream" in text_of(echo)
    assert "42" in text_of(summed)
    assert structured.structured_content is not None  # structuredContent passes through
    assert [p[0] for p in updates] == [1, 2, 3], updates
    assert updates[-1][1] == 3
    assert invalid.is_error  # the server's validation error, as the server reported it


async def test_profile_membership_change_reaches_connected_sessions(hosted: RunningJarvis) -> None:
    async with mcp_client(hosted.url()) as admin:
        await create_toy(admin, "toy-late")
        await create_profile(admin, "growing")
    notices: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            notices.append(message.method)

    async with mcp_session(hosted.url("/mcp/profile/growing"), on_message=on_message) as client:
        assert client.server_capabilities.tools is not None
        assert client.server_capabilities.tools.list_changed is True
        assert (await client.list_tools()).tools == []
        async with mcp_client(hosted.url()) as admin:
            await admin.call_tool("jarvis_profile", {"action": "edit", "name": "growing", "add": ["toy-late"]})
        # The notice rides the session's GET stream; it arrives without a restart or a new session.
        await eventually(lambda: asyncio.sleep(0, notices), what="tools/list_changed")
        names = {t.name for t in (await client.list_tools()).tools}
    assert "toy-late__whoami" in names


async def test_two_servers_with_the_same_tools_never_shadow_each_other(hosted: RunningJarvis) -> None:
    async with mcp_client(hosted.url()) as admin:
        await create_toy(admin, "twin-a")
        await create_toy(admin, "twin-b")
        await create_profile(admin, "twins", "twin-a", "twin-b")
    async with mcp_client(hosted.url("/mcp/profile/twins")) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        a = whoami(await client.call_tool("twin-a__whoami", {}))
        b = whoami(await client.call_tool("twin-b__whoami", {}))
    assert {"twin-a__echo", "twin-b__echo", "twin-a__whoami", "twin-b__whoami"} <= names
    assert (a["name"], b["name"]) == ("twin-a", "twin-b")
    assert a["pid"] != b["pid"]


async def test_long_names_are_cut_with_a_hash(hosted: RunningJarvis) -> None:
    long_name = "a-very-long-server-name-that-leaves-little-room-for-tool-name"
    async with mcp_client(hosted.url()) as admin:
        await create_toy(admin, long_name)
        await create_profile(admin, "long", long_name)
    async with mcp_client(hosted.url("/mcp/profile/long")) as client:
        tools = (await client.list_tools()).tools
        again = (await client.list_tools()).tools
        echo = next(t.name for t in tools if t.description == "Echo the text back")
        answer = await client.call_tool(echo, {"text": "still reachable"})
    names = [t.name for t in tools]
    assert all(len(n) <= 64 for n in names), names
    assert len(set(names)) == len(names) == 6
    assert names == [t.name for t in again]  # deterministic
    assert text_of(answer) == "still reachable"


async def test_an_unprefixed_one_server_profile_is_transparent(tmp_path: Path) -> None:
    async with Client(StdioServerParameters(command=time_server()), mode="legacy") as direct:
        expected = sorted(t.name for t in (await direct.list_tools()).tools)
    # A sync with the registry only once a minute: what follows must not wait for it.
    slow_sync = start_jarvis(
        tmp_path / "data", env={"HOME": str(tmp_path), **FAST_ENV, "JARVIS_AGGREGATOR_DOWNSTREAM_WATCH_SECONDS": "60"}
    )
    try:
        async with mcp_client(slow_sync.url()) as admin:
            await create_server(admin, "clock-solo", [time_server()])
            await create_profile(admin, "solo", "clock-solo")
            notices: list[str] = []

            async def on_message(message: Any) -> None:
                if isinstance(message, types.ToolListChangedNotification):
                    notices.append(message.method)

            async with mcp_session(slow_sync.url("/mcp/profile/solo"), on_message=on_message) as client:
                assert {t.name for t in (await client.list_tools()).tools} == {f"clock-solo__{n}" for n in expected}
                # A setting that names nothing here: its sync takes in the tools the first listing pinned (a notice
                # of its own), so the one below can only come from the renaming.
                idle = {"action": "set", "key": "servers.idle_stop_seconds", "value": 900}
                result_json(await admin.call_tool("jarvis_config", idle))
                await asyncio.sleep(0.5)
                notices.clear()
                result_json(
                    await admin.call_tool(
                        "jarvis_config", {"action": "set", "key": "servers.unprefixed_profiles", "value": ["solo"]}
                    )
                )
                # A `servers.*` setting made through this aggregator applies here at once.
                assert sorted(t.name for t in (await client.list_tools()).tools) == expected
                # and the session connected to the profile is told that its tools' names changed.
                await eventually(lambda: asyncio.sleep(0, notices), what="tools/list_changed after the renaming")
    finally:
        slow_sync.stop()


async def test_calls_answer_with_json_unless_the_caller_asked_for_progress(hosted: RunningJarvis) -> None:
    """A streamed (SSE) answer only where progress may precede the result; the rest take a cheaper JSON body,
    and both kinds interleaved on one session each get their own answer."""
    async with mcp_client(hosted.url()) as admin:
        await create_server(admin, "everything-raw", everything_server())
        await create_profile(admin, "raw", "everything-raw")
    url = hosted.url("/mcp/profile/raw")
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx2.AsyncClient(timeout=30) as http:
        opened = await http.post(
            url,
            headers=accept,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            },
        )
        assert opened.headers["content-type"].startswith("text/event-stream")
        session = {**accept, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        await http.post(url, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"})

        def call(request_id: int, name: str, arguments: dict[str, Any], token: str | None = None) -> Any:
            params: dict[str, Any] = {"name": name, "arguments": arguments}
            if token is not None:
                params["_meta"] = {"progressToken": token}
            return http.post(
                url,
                headers=session,
                json={"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params},
            )

        streamed, *plain = await asyncio.gather(
            call(2, "everything-raw__trigger-long-running-operation", {"duration": 1, "steps": 2}, token="p1"),
            *(call(3 + i, "everything-raw__get-sum", {"a": i, "b": 100}) for i in range(5)),
        )
    for i, answer in enumerate(plain):
        assert answer.headers["content-type"].startswith("application/json")
        body = answer.json()
        assert body["id"] == 3 + i
        assert f"{i + 100}" in body["result"]["content"][0]["text"]
    assert streamed.headers["content-type"].startswith("text/event-stream")
    events = [
        json.loads(line[5:]) for line in streamed.text.splitlines() if line.startswith("data:") and line[5:].strip()
    ]
    progress = [e["params"]["progress"] for e in events if e.get("method") == "notifications/progress"]
    assert progress == [1, 2]
    assert all(e["params"]["progressToken"] == "p1" for e in events if "method" in e)
    assert events[-1]["id"] == 2
    assert "result" in events[-1]
