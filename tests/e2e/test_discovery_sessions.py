"""Where loaded tools live: per MCP session, across reconnects, in Redis across replicas; 2026-era clients."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.support.discovery import DISCOVERY_TOOLS, Recorder, call, discovery_client, names
from tests.support.redis_server import redis_url
from tests.support.stack import RunningJarvis, error_text, start_jarvis

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_url(tmp_path_factory.mktemp("redis")) as url:
        yield url


async def test_modern_clients_keep_a_fixed_tool_list(jarvis: RunningJarvis) -> None:
    async with discovery_client(jarvis.url("/mcp"), mode="auto") as client:
        assert client.protocol_version >= "2026"
        assert await names(client) == DISCOVERY_TOOLS
        answer = await call(client, "tool_load", {"names": ["jarvis_profile"]})
        assert answer["loaded"] == []
        assert answer["tools"][0]["name"] == "jarvis_profile"
        assert answer["tools"][0]["input_schema"]["properties"]["action"]["enum"]
        assert "tool_call" in answer["message"]
        assert "2026-07-28" in answer["message"]
        assert await names(client) == DISCOVERY_TOOLS
        assert (await call(client, "tool_active"))["count"] == 0
        profiles = await call(client, "tool_call", {"name": "jarvis_profile", "arguments": {"action": "list"}})
        unknown = error_text(await client.call_tool("tool_load", {"names": ["nope_tool"]}))
    assert "profiles" in profiles
    assert "not found" in unknown


async def test_a_reconnect_with_the_same_session_id_keeps_the_active_set(jarvis: RunningJarvis) -> None:
    first = Recorder()
    async with discovery_client(jarvis.url("/mcp"), recorder=first, keep_session=True) as client:
        await call(client, "tool_load", {"names": ["jarvis_config"]})
    assert first.session_id
    async with discovery_client(jarvis.url("/mcp"), session_id=first.session_id) as client:
        assert await names(client) == [*DISCOVERY_TOOLS, "jarvis_config"]
        assert (await call(client, "tool_active"))["count"] == 1
        assert "config" in await call(client, "jarvis_config", {"action": "list"})
    async with discovery_client(jarvis.url("/mcp")) as other:
        assert await names(other) == DISCOVERY_TOOLS  # another session has its own set


async def test_stateless_without_redis_still_keeps_a_session(tmp_path: Path) -> None:
    running = start_jarvis(
        tmp_path / "data", "--stateless", env={"HOME": str(tmp_path), "REDIS_URL": "", "JARVIS_REDIS_URL": ""}
    )
    try:
        recorder = Recorder()
        async with discovery_client(running.url("/mcp"), recorder=recorder) as client:
            loaded = await call(client, "tool_load", {"names": ["jarvis_profile"]})
            listed = await names(client)
        assert recorder.session_id
        assert loaded["loaded"] == ["jarvis_profile"]
        assert listed == [*DISCOVERY_TOOLS, "jarvis_profile"]
    finally:
        running.stop()


async def test_replicas_share_active_sets_through_redis(tmp_path: Path, redis: str) -> None:
    env = {"HOME": str(tmp_path), "JARVIS_REDIS_URL": redis}
    first = start_jarvis(tmp_path / "a", "--stateless", env=env)
    second = start_jarvis(tmp_path / "b", "--stateless", env=env)
    try:
        recorder = Recorder()
        async with discovery_client(first.url("/mcp"), recorder=recorder) as client:
            loaded = await call(client, "tool_load", {"names": ["jarvis_profile", "jarvis_config"]})
            assert loaded["active_count"] == 2
        assert recorder.session_id
        async with discovery_client(second.url("/mcp"), session_id=recorder.session_id) as client:
            assert await names(client) == [*DISCOVERY_TOOLS, "jarvis_profile", "jarvis_config"]
            active = await call(client, "tool_active")
            assert [a["name"] for a in active["active"]] == ["jarvis_profile", "jarvis_config"]
            assert "profiles" in await call(client, "jarvis_profile", {"action": "list"})
            await call(client, "tool_load", {"names": ["jarvis_server"]})
        async with discovery_client(first.url("/mcp"), session_id=recorder.session_id) as client:
            assert (await call(client, "tool_active"))["count"] == 3
    finally:
        first.stop()
        second.stop()


async def test_stdio_serves_the_default_surface(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "jarvis.cli", "--data-dir", str(tmp_path / "data"), "mcp", "--surface", "discovery"],
        env={**os.environ, "HOME": str(tmp_path), "JARVIS_LOG_LEVEL": "WARNING"},
    )
    recorder = Recorder()
    async with Client(params, mode="legacy", message_handler=recorder) as client:
        assert client.server_capabilities.tools is not None
        assert client.server_capabilities.tools.list_changed is True
        found = await call(client, "tool_find", {"query": "profiles"})
        assert found["results"][0]["name"] == "jarvis_profile"
        await call(client, "tool_load", {"names": ["jarvis_profile"]})
        assert await names(client) == [*DISCOVERY_TOOLS, "jarvis_profile"]
        assert "profiles" in await call(client, "jarvis_profile", {"action": "list"})
        with anyio.fail_after(10):
            while not recorder.tool_list_changes():
                await anyio.sleep(0.05)
