"""Hosting downstream servers in a real `jarvis up`: crash and restart, deadlines and cancellation, idle stop,
bad servers contained and reported, and no process left behind when Jarvis stops or is killed."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.support.downstream import (
    FAST_ENV,
    create_profile,
    create_server,
    create_toy,
    eventually,
    process_gone,
    server_info,
    text_of,
    time_server,
    whoami,
)
from tests.support.stack import RunningJarvis, error_text, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio


HOSTED_ENV = {"JARVIS_AGGREGATOR_DOWNSTREAM_CALL_TIMEOUT": "3"}


async def test_a_killed_server_shows_in_status_and_the_next_call_restarts_it(hosted: RunningJarvis) -> None:
    async with mcp_client(hosted.url()) as admin:
        await create_toy(admin, "phoenix")
        await create_profile(admin, "rebirth", "phoenix")
    async with mcp_client(hosted.url("/mcp/profile/rebirth")) as client:
        first = whoami(await client.call_tool("phoenix__whoami", {}))
        os.kill(first["pid"], signal.SIGKILL)
        async with mcp_client(hosted.url()) as admin:
            info = await eventually(lambda: _crashed(admin), what="status shows the crash")
        assert "killed by signal 9" in info["runtime"]["last_error"]
        assert info["runtime"]["restarts"] >= 1
        second = whoami(await client.call_tool("phoenix__whoami", {}))
    assert second["pid"] != first["pid"]
    async with mcp_client(hosted.url()) as admin:
        status = result_json(await admin.call_tool("jarvis_check_status", {}))
    assert status["downstream"]["servers"]["phoenix"]["state"] == "running"
    assert status["downstream"]["servers"]["phoenix"]["restarts"] >= 1
    # Ops see the same on /metrics.
    metrics = httpx2.get(hosted.base_url + "/metrics", timeout=5).text
    assert _sample(metrics, 'jarvis_downstream_server_restarts_total{server="phoenix"}') >= 1
    assert _sample(metrics, 'jarvis_downstream_server_up{server="phoenix"}') == 1
    assert _sample(metrics, 'jarvis_downstream_servers{state="running"}') >= 1


def _sample(exposition: str, series: str) -> float:
    values = [float(line.rpartition(" ")[2]) for line in exposition.splitlines() if line.startswith(series + " ")]
    assert values, f"{series} is not exported"
    return values[0]


async def _crashed(admin: Any) -> Any:
    info = await server_info(admin, "phoenix")
    return info if info["runtime"]["restarts"] >= 1 else None


async def test_a_crash_mid_call_is_a_clear_error_not_a_hang(hosted: RunningJarvis) -> None:
    async with mcp_client(hosted.url()) as admin:
        await create_toy(admin, "fragile")
        await create_profile(admin, "brittle", "fragile")
    async with mcp_client(hosted.url("/mcp/profile/brittle")) as client:
        with anyio.fail_after(10):
            crashed = await client.call_tool("fragile__crash", {})
        assert crashed.is_error
        assert "fragile" in text_of(crashed)
        assert "exited with code 7" in text_of(crashed)
        assert not (await client.call_tool("fragile__echo", {"text": "back"})).is_error


async def test_deadlines_cancellation_and_tool_errors_pass_through(hosted: RunningJarvis) -> None:
    async with mcp_client(hosted.url()) as admin:
        await create_toy(admin, "sloth")
        await create_profile(admin, "lazy", "sloth")
    async with mcp_client(hosted.url("/mcp/profile/lazy")) as client:
        failed = await client.call_tool("sloth__fail", {})
        late = await client.call_tool("sloth__slow", {"seconds": 8})  # the call timeout is 3 s here
        with anyio.move_on_after(0.5):  # the caller gives up: Jarvis cancels the downstream request
            await client.call_tool("sloth__slow", {"seconds": 8})
        who = await eventually(lambda: _cancelled(client), what="the downstream saw the cancellation")
    assert failed.is_error
    assert text_of(failed) == "it failed, as asked"
    assert late.is_error
    assert "did not answer tools/call within 3 s" in text_of(late)
    assert who["cancelled"] >= 2  # the timed-out call and the abandoned one


async def _cancelled(client: Any) -> Any:
    who = whoami(await client.call_tool("sloth__whoami", {}))
    return who if who["cancelled"] >= 2 else None


async def test_bad_servers_are_contained_named_and_retried(hosted: RunningJarvis) -> None:
    async with mcp_client(hosted.url()) as admin:
        for mode in ("exit", "hang", "garbage", "badschema"):
            await create_toy(admin, f"bad-{mode}", mode)
        await create_server(admin, "missing", ["/nonexistent/mcp-server"])
        await create_server(admin, "good-clock", [time_server()])
        await create_toy(admin, "big-mouth")
        result_json(
            await admin.call_tool(
                "jarvis_server",
                {"action": "create", "name": "boxed", "type": "container", "image": "example.invalid/mcp:1"},
            )
        )
        await create_profile(
            admin,
            "zoo",
            "bad-exit",
            "bad-hang",
            "bad-garbage",
            "bad-badschema",
            "missing",
            "good-clock",
            "big-mouth",
            "boxed",
        )
    async with mcp_client(hosted.url("/mcp/profile/zoo")) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {
            "good-clock__get_current_time",
            "bad-garbage__echo",
            "bad-badschema__no_type",
            "bad-badschema__not_schema",
            "bad-badschema__string_schema",
        } <= set(tools)
        assert all(t.input_schema.get("type") == "object" for t in tools.values())
        assert not (await client.call_tool("bad-garbage__echo", {"text": "fine"})).is_error
        big = await client.call_tool("big-mouth__big", {"bytes": 500_000})  # the limit is 200,000 here
        assert big.is_error
        assert "big-mouth" in text_of(big)
        assert "larger than" in text_of(big)
        assert not (await client.call_tool("big-mouth__big", {"bytes": 1000})).is_error
        down = await client.call_tool("bad-exit__echo", {"text": "x"}) if "bad-exit__echo" in tools else None
        assert not (await client.call_tool("good-clock__get_current_time", {"timezone": "UTC"})).is_error
    assert down is None  # a server that never started contributes no tools
    async with mcp_client(hosted.url()) as admin:
        # The hanging one fails when its initialize deadline (5 s) passes.
        listing = await eventually(lambda: _failed(admin, "bad-exit", "bad-hang", "missing"), what="reported")
        garbage = await server_info(admin, "bad-garbage")
        schema = await server_info(admin, "bad-badschema")
    assert listing["bad-exit"]["status"] in ("failing", "starting")  # it is being retried
    assert "exited with code 3" in listing["bad-exit"]["last_error"]
    assert "boom: missing configuration" in listing["bad-exit"]["last_error"]
    assert "did not answer initialize within 5 s" in listing["bad-hang"]["last_error"]
    assert "not found" in listing["missing"]["last_error"]
    assert listing["good-clock"]["status"] == "running"
    assert listing["boxed"]["status"] == "failing"
    assert "example.invalid/mcp:1" in listing["boxed"]["last_error"]  # the runtime names the missing image
    assert garbage["runtime"]["state"] == "running"
    assert set(schema["runtime"]["schema_fixes"]) == {"no_type", "not_schema", "string_schema"}
    # Failing servers are retried with growing delays.
    async with mcp_client(hosted.url()) as admin:
        later = await eventually(lambda: _failures(admin, "bad-exit", 2), what="a retry")
    assert later["runtime"]["retry_in_seconds"] is not None


async def _failed(admin: Any, *names: str) -> Any:
    servers = result_json(await admin.call_tool("jarvis_server", {"action": "list"}))["servers"]
    listing = {s["name"]: s for s in servers}
    return listing if all(listing[n].get("last_error") for n in names) else None


async def _failures(admin: Any, name: str, at_least: int) -> Any:
    info = await server_info(admin, name)
    return info if info["runtime"]["failures"] >= at_least else None


async def test_idle_servers_stop_and_start_again_on_use(hosted: RunningJarvis) -> None:
    async with mcp_client(hosted.url()) as admin:
        await create_toy(admin, "dozy")
        await create_profile(admin, "sleepy", "dozy")
        result_json(
            await admin.call_tool("jarvis_config", {"action": "set", "key": "servers.idle_stop_seconds", "value": 1})
        )
        try:
            async with mcp_client(hosted.url("/mcp/profile/sleepy")) as client:
                pid = whoami(await client.call_tool("dozy__whoami", {}))["pid"]
                await eventually(lambda: _state(admin, "dozy", "stopped"), what="idle stop")
                assert process_gone(pid)
                again = whoami(await client.call_tool("dozy__whoami", {}))
            assert again["pid"] != pid
        finally:
            await admin.call_tool("jarvis_config", {"action": "set", "key": "servers.idle_stop_seconds", "value": 900})


async def _state(admin: Any, name: str, state: str) -> bool:
    return bool((await server_info(admin, name))["runtime"]["state"] == state)


async def test_profile_restart_reports_each_outcome(hosted: RunningJarvis) -> None:
    async with mcp_client(hosted.url()) as admin:
        await create_toy(admin, "steady")
        await create_toy(admin, "doomed", "exit")
        await create_profile(admin, "mixed", "steady", "doomed")
        restarted = result_json(await admin.call_tool("jarvis_profile", {"action": "restart", "name": "mixed"}))
        unknown = await admin.call_tool("jarvis_profile", {"action": "restart", "name": "no-such-profile"})
    outcomes = {s["name"]: s for s in restarted["restarted"][0]["servers"]}
    assert outcomes["steady"]["outcome"] == "running"
    assert outcomes["steady"]["tools"] == 6
    assert outcomes["doomed"]["outcome"] == "failed"
    assert "exited with code 3" in outcomes["doomed"]["error"]
    assert "no-such-profile" in error_text(unknown)


async def test_no_downstream_process_outlives_jarvis(tmp_path: Path) -> None:
    for stop in ("graceful", "killed"):
        running = start_jarvis(tmp_path / stop, env={"HOME": str(tmp_path), **FAST_ENV})
        try:
            async with mcp_client(running.url()) as admin:
                await create_toy(admin, "orphan")
                await create_profile(admin, "kids", "orphan")
            async with mcp_client(running.url("/mcp/profile/kids")) as client:
                pid = whoami(await client.call_tool("orphan__whoami", {}))["pid"]
        finally:
            if stop == "killed":
                running.process.kill()  # SIGKILL: Jarvis cannot clean up; the kernel must
                running.process.wait(10)
            running.stop()
        for _ in range(50):
            if process_gone(pid):
                break
            await asyncio.sleep(0.1)
        assert process_gone(pid), f"server process {pid} outlived a {stop} Jarvis stop"


async def test_autostart_profiles_start_without_a_call(hosted: RunningJarvis) -> None:
    async with mcp_client(hosted.url()) as admin:
        await create_toy(admin, "early-bird")
        await create_profile(admin, "early", "early-bird")
        result_json(
            await admin.call_tool(
                "jarvis_config", {"action": "set", "key": "servers.autostart_profiles", "value": ["early"]}
            )
        )
        try:
            await eventually(lambda: _state(admin, "early-bird", "running"), what="eager start")
        finally:
            await admin.call_tool("jarvis_config", {"action": "set", "key": "servers.autostart_profiles", "value": []})
