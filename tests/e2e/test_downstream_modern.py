"""Jarvis as the client of a server that speaks only 2026-07-28 (issue 33 items 1 and 5): the toy server in its
`modern` mode answers `initialize` with -32601, so Jarvis opens its session with `server/discover`, and every
request it sends there carries the 2026 `_meta` envelope, whichever era Jarvis's own caller speaks. A profile
mixing it with a 2025-only server works for both kinds of caller. And a server that cuts each call's SSE stream
short (the toy's `resumable` mode, over HTTP) has its calls resumed with `Last-Event-ID` after its `retry` ms
(issue 33 item 3), not failed and restarted."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest

from tests.e2e.test_downstream_conformance import REFERENCE, _wait_listening
from tests.support.downstream import (
    FAST_ENV,
    TOY,
    create_profile,
    create_toy,
    eventually,
    mcp_session,
    server_info,
    text_of,
)
from tests.support.stack import RunningJarvis, free_port, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio

LEGACY, MODERN = "legacy", "2026-07-28"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"


@pytest.mark.parametrize("caller", [LEGACY, MODERN])
async def test_a_2026_only_server_is_reached_by_discover_beside_a_2025_one(tmp_path: Path, caller: str) -> None:
    running = start_jarvis(tmp_path / "data", "--require-auth", env={"HOME": str(tmp_path), **FAST_ENV})
    try:
        admin = running.create_token("admin", name="admin")
        async with mcp_client(running.url(), admin) as jarvis:
            await create_toy(jarvis, "old")
            await create_toy(jarvis, "new", "modern")
            await create_profile(jarvis, "mixed", "old", "new")
        async with mcp_client(running.url("/mcp/profile/mixed"), admin, mode=caller) as client:

            async def both_listed() -> set[str]:
                names = {tool.name for tool in (await client.list_tools()).tools}
                return names if {"old__echo", "new__echo"} <= names else set()

            await eventually(both_listed, what="both servers' tools listed")
            assert text_of(await client.call_tool("new__echo", {"text": "hi"})) == "hi"
            assert text_of(await client.call_tool("old__echo", {"text": "yo"})) == "yo"
            who: Any = (await client.call_tool("new__whoami", {})).structured_content
            assert who["meta"][VERSION_KEY] == MODERN  # each request says its era, as 2026-07-28 wants
            assert who["meta"]["io.modelcontextprotocol/clientInfo"]["name"]
            assert who["initialize_refused"] == 1
        async with mcp_client(running.url(), admin) as jarvis:
            assert (await server_info(jarvis, "new"))["runtime"]["speaks"] == [MODERN]
            restarted = result_json(await jarvis.call_tool("jarvis_profile", {"action": "restart", "name": "mixed"}))
            outcomes = {r["name"]: r["outcome"] for r in restarted["restarted"][0]["servers"]}
            assert outcomes["new"] == "running", restarted
        async with mcp_client(running.url("/mcp/profile/mixed"), admin, mode=caller) as client:
            who = (await client.call_tool("new__whoami", {})).structured_content
            assert who["initialize_refused"] == 0  # Jarvis remembered it speaks 2026-07-28 only: discover first
        async with mcp_client(running.url(), admin) as jarvis:
            assert (await server_info(jarvis, "old"))["runtime"]["speaks"] == ["2025-11-25"]
    finally:
        running.stop()


@pytest.mark.parametrize("caller", [LEGACY, MODERN])
async def test_a_call_whose_stream_is_cut_is_resumed_after_retry(tmp_path: Path, caller: str) -> None:
    port = free_port()
    toy = _serving(port, [str(TOY), "resumable", str(port)], {"TOY_RETRY_MS": "400"})
    running = start_jarvis(tmp_path / "data", "--require-auth", env={"HOME": str(tmp_path), **FAST_ENV})
    try:
        admin = running.create_token("admin", name="admin")
        await _profile_of(running, "cut", port, admin)
        async with mcp_client(running.url("/mcp/profile/cuts"), admin, mode=caller) as client:
            await eventually(lambda: _listed(client, "cut__echo"), what="the resumable server's tools listed")
            assert text_of(await client.call_tool("cut__echo", {"text": "one"})) == "one"
            assert text_of(await client.call_tool("cut__echo", {"text": "two"})) == "two"
            resumed = json.loads(text_of(await client.call_tool("cut__whoami", {})))
        calls = [r for r in resumed if r["last_event_id"].startswith("call-")]  # (the rest: its standalone stream)
        assert len(calls) == 2, resumed
        assert all(400 <= r["after_ms"] < 1000 for r in calls), resumed  # the server's retry, not 1 s nor at once
        async with mcp_client(running.url(), admin) as jarvis:
            runtime = (await server_info(jarvis, "cut"))["runtime"]
        assert (runtime["state"], runtime["restarts"]) == ("running", 0)
    finally:
        running.stop()
        toy.terminate()
        toy.wait(10)


async def test_tools_a_server_said_go_stale_are_listed_again_when_they_do(tmp_path: Path) -> None:
    """A server whose tools/list says `ttlMs: 1000` and tells nobody of a new tool: Jarvis lists its tools again when
    they went stale (at most every 5 s), so the tool shows up without a notice or a restart."""
    running = start_jarvis(tmp_path / "data", env={"HOME": str(tmp_path), **FAST_ENV})
    try:
        async with mcp_client(running.url()) as jarvis:
            await create_toy(jarvis, "quiet", "modern", TOY_TOOLS_TTL_MS="1000")
            await create_profile(jarvis, "still", "quiet")
        async with mcp_client(running.url("/mcp/profile/still")) as client:
            await eventually(lambda: _listed(client, "quiet__sneak"), what="the server's tools listed")
            assert text_of(await client.call_tool("quiet__sneak", {})) == "sneaked1 added quietly"
            assert not await _listed(client, "quiet__sneaked1")
            await eventually(lambda: _listed(client, "quiet__sneaked1"), 20, "the quiet tool listed after the ttl")
            who: Any = (await client.call_tool("quiet__whoami", {})).structured_content
            assert who["tools_listed"] >= 2
    finally:
        running.stop()


@pytest.mark.parametrize("caller", [LEGACY, MODERN])
async def test_the_reference_servers_cut_stream_is_resumed_after_its_retry(tmp_path: Path, caller: str) -> None:
    """The reference server in its `resumable` mode (the SDK's own event store and `retry`) closes `test_reconnection`'s
    stream before the result: through Jarvis the call still answers, after a GET with `Last-Event-ID` that came once
    the server's retry had passed."""
    port, record = free_port(), tmp_path / "reference.requests"
    reference = _serving(
        port,
        [str(REFERENCE), str(port), "resumable"],
        {"REFERENCE_RECORD": str(record), "REFERENCE_RETRY_MS": "400"},
    )
    running = start_jarvis(tmp_path / "data", env={"HOME": str(tmp_path), **FAST_ENV})
    try:
        await _profile_of(running, "ref", port)
        async with mcp_client(running.url("/mcp/profile/cuts"), mode=caller) as client:
            await eventually(lambda: _listed(client, "ref__test_reconnection"), what="the reference server's tools")
            answer = text_of(await client.call_tool("ref__test_reconnection", {}))
        assert answer == "Reconnection test completed successfully"
        seen = [json.loads(line) for line in record.read_text().splitlines()]
        cut = [e["cut_at"] for e in seen if "cut_at" in e]
        resumed = [e for e in seen if "last_event_id" in e]
        assert len(cut) == 1, seen
        assert resumed, seen
        assert 0.4 <= resumed[0]["at"] - cut[0] < 1.0, seen  # after the server's retry, not at once nor 1 s later
        async with mcp_client(running.url()) as jarvis:
            runtime = (await server_info(jarvis, "ref"))["runtime"]
        assert (runtime["state"], runtime["restarts"]) == ("running", 0)
    finally:
        running.stop()
        reference.terminate()
        reference.wait(10)


def _serving(port: int, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A server started with `args` (a Python script and its arguments), once it listens on `port`."""
    server = subprocess.Popen([sys.executable, *args], env={**os.environ, **env})
    _wait_listening(port, server)
    return server


async def _profile_of(running: RunningJarvis, name: str, port: int, token: str | None = None) -> None:
    """Install the streamable-HTTP server on `port` as `name`, alone in the profile `cuts`."""
    async with mcp_client(running.url(), token) as jarvis:
        spec = {"action": "create", "name": name, "type": "streamable-http", "url": f"http://127.0.0.1:{port}/mcp"}
        result_json(await jarvis.call_tool("jarvis_server", spec))
        await create_profile(jarvis, "cuts", name)


async def _listed(client: Any, name: str) -> bool:
    return name in {tool.name for tool in (await client.list_tools()).tools}


async def test_a_2026_only_servers_tool_changes_are_heard_on_a_listen_stream(tmp_path: Path) -> None:
    """The toy announces `tools.listChanged` and tells a change only on a listen stream that asked for it: Jarvis holds
    one open, so the profile lists the new tool without a restart."""
    running = start_jarvis(tmp_path / "data", env={"HOME": str(tmp_path), **FAST_ENV})
    try:
        async with mcp_client(running.url()) as jarvis:
            await create_toy(jarvis, "growing", "modern")
            await create_profile(jarvis, "garden", "growing")
        async with mcp_client(running.url("/mcp/profile/garden")) as client:

            async def listening() -> list[Any]:
                who: Any = (await client.call_tool("growing__whoami", {})).structured_content
                return list(who["listening"])

            wanted = {"toolsListChanged": True, "resourcesListChanged": True}
            assert await eventually(listening, what="Jarvis listening") == [wanted]
            assert "growing__grown1" not in {t.name for t in (await client.list_tools()).tools}
            assert text_of(await client.call_tool("growing__grow", {})) == "grown1 added; 1 listening"

            async def grown() -> bool:
                return "growing__grown1" in {t.name for t in (await client.list_tools()).tools}

            await eventually(grown, what="the grown tool listed")
    finally:
        running.stop()


async def test_a_list_a_2026_server_says_stays_fresh_is_reused_until_it_says_it_changed(tmp_path: Path) -> None:
    """Jarvis as a caching client (SEP-2549): a profile merging two 2026-only servers asks the one whose
    resources/list says `ttlMs: 60000` once, and the one whose says 0 every time; when the first tells of a change on
    its listen stream, the next listing asks it again and shows the new resource."""
    running = start_jarvis(tmp_path / "data", env={"HOME": str(tmp_path), **FAST_ENV})
    try:
        async with mcp_client(running.url()) as jarvis:
            await create_toy(jarvis, "fresh", "modern", TOY_LIST_TTL_MS="60000")
            await create_toy(jarvis, "stale", "modern")
            await create_profile(jarvis, "shelf", "fresh", "stale")
        async with mcp_client(running.url("/mcp/profile/shelf")) as client:

            async def listed(server: str) -> int:
                who: Any = (await client.call_tool(f"{server}__whoami", {})).structured_content
                return int(who["resources_listed"])

            async def uris() -> set[str]:
                return {str(r.uri) for r in (await client.list_resources()).resources}

            for _ in range(3):
                assert await uris() == {"jarvis://fresh/toy://notes/1", "jarvis://stale/toy://notes/1"}
            assert await listed("fresh") == 1
            assert await listed("stale") == 3
            assert text_of(await client.call_tool("fresh__note", {})) == "toy://notes/2 added"

            async def renewed() -> bool:
                return "jarvis://fresh/toy://notes/2" in await uris()

            await eventually(renewed, what="the new resource listed after the server told of it")
            assert await listed("fresh") == 2
        async with httpx2.AsyncClient() as http:
            metrics = (await http.get(running.base_url + "/metrics")).text
        assert 'jarvis_downstream_cached_results_total{method="resources/list"} 2.0' in metrics
    finally:
        running.stop()


async def test_a_2025_callers_subscription_to_a_2026_only_server_rides_its_listen_stream(tmp_path: Path) -> None:
    """2026-07-28 has no resources/subscribe: a 2025 caller's subscription becomes the URI in the
    `resourceSubscriptions` of Jarvis's listen stream to the server (listened again with the new set), the update the
    server tells there reaches the caller, and unsubscribing takes the URI off again."""
    running = start_jarvis(tmp_path / "data", env={"HOME": str(tmp_path), **FAST_ENV})
    try:
        async with mcp_client(running.url()) as jarvis:
            await create_toy(jarvis, "watched", "modern")
            await create_toy(jarvis, "plain")
            await create_profile(jarvis, "desk", "watched", "plain")
        heard: list[str] = []

        async def on_message(message: Any) -> None:
            if isinstance(message, types.ResourceUpdatedNotification):
                heard.append(str(message.params.uri))

        async with mcp_session(running.url("/mcp/profile/desk"), on_message=on_message) as client:

            async def listening() -> list[Any]:
                who: Any = (await client.call_tool("watched__whoami", {})).structured_content
                return list(who["listening"])

            await eventually(listening, what="Jarvis listening to the 2026-only server")
            await client.subscribe_resource("jarvis://watched/toy://notes/1")

            async def subscribed() -> bool:
                return any(f.get("resourceSubscriptions") == ["toy://notes/1"] for f in await listening())

            await eventually(subscribed, what="the URI on Jarvis's listen stream")
            assert len(await listening()) == 1  # the stream was replaced, not joined by another
            told = text_of(await client.call_tool("watched__touch", {"uri": "toy://notes/1"}))
            assert told == "toy://notes/1 updated; told 1 stream(s)"
            await eventually(lambda: asyncio.sleep(0, heard), what="the update at the subscribed caller")
            assert heard == ["jarvis://watched/toy://notes/1"]
            await client.unsubscribe_resource("jarvis://watched/toy://notes/1")

            async def unsubscribed() -> bool:
                filters = await listening()
                return len(filters) == 1 and "resourceSubscriptions" not in filters[0]

            await eventually(unsubscribed, what="the URI off Jarvis's listen stream")
    finally:
        running.stop()


async def test_a_standalone_stream_cut_by_the_server_is_resumed_with_last_event_id(tmp_path: Path) -> None:
    """The toy's `resumable` mode cuts its standalone GET stream after every delivery: a resource update told while
    it is cut reaches the subscribed caller once Jarvis comes back with `Last-Event-ID` after the server's retry."""
    port = free_port()
    toy = _serving(port, [str(TOY), "resumable", str(port)], {"TOY_RETRY_MS": "300"})
    running = start_jarvis(tmp_path / "data", env={"HOME": str(tmp_path), **FAST_ENV})
    heard: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            heard.append(str(message.params.uri))

    try:
        await _profile_of(running, "cut", port)
        async with mcp_session(running.url("/mcp/profile/cuts"), on_message=on_message) as client:
            await eventually(lambda: _listed(client, "cut__touch"), what="the resumable server's tools listed")
            await client.subscribe_resource("jarvis://cut/toy://notes/1")
            await asyncio.sleep(0.5)  # the standalone stream was cut after its priming event
            told = text_of(await client.call_tool("cut__touch", {"uri": "toy://notes/1"}))
            assert told == "toy://notes/1 updated on the standalone stream"
            await eventually(lambda: asyncio.sleep(0, heard), what="the update after the stream was resumed")
            assert heard == ["jarvis://cut/toy://notes/1"]
            resumed = json.loads(text_of(await client.call_tool("cut__whoami", {})))
        standalone = [r for r in resumed if r["last_event_id"].startswith("get-")]
        assert standalone, resumed
        assert 300 <= standalone[0]["after_ms"] < 1000, resumed  # the first came back after the server's retry
    finally:
        running.stop()
        toy.terminate()
        toy.wait(10)
