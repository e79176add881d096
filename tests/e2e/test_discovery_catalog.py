"""What discovery shows whom, and how the catalog follows installs without a restart."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from tests.support.discovery import call, discovery_client, names
from tests.support.stack import RunningJarvis, error_text

pytestmark = pytest.mark.anyio


async def _found(client: Client, query: str, limit: int = 50) -> list[str]:
    return [r["name"] for r in (await call(client, "tool_find", {"query": query, "limit": limit}))["results"]]


async def test_a_scoped_token_sees_and_calls_only_what_it_may(secured: RunningJarvis) -> None:
    token = secured.create_token("jarvis:jarvis_profile", name="profiles-only")
    async with discovery_client(secured.url("/mcp"), token=token) as client:
        assert len(await names(client)) == 6  # the default surface needs no scope of its own
        found = await _found(client, "servers profiles config clients status files")
        assert found == ["jarvis_profile"]
        hidden = error_text(await client.call_tool("tool_describe", {"name": "jarvis_server"}))
        unknown = error_text(await client.call_tool("tool_describe", {"name": "no_such_tool"}))
        call_hidden = error_text(
            await client.call_tool("tool_call", {"name": "jarvis_server", "arguments": {"action": "list"}})
        )
        load_hidden = error_text(await client.call_tool("tool_load", {"names": ["jarvis_server"]}))
        profiles = await call(client, "tool_call", {"name": "jarvis_profile", "arguments": {"action": "list"}})
        await call(client, "tool_load", {"names": ["jarvis_profile"]})
        assert await names(client) == [
            "tool_find",
            "tool_describe",
            "tool_load",
            "tool_active",
            "tool_call",
            "code_run",
            "jarvis_profile",
        ]
    # Described or loaded, a hidden tool is indistinguishable from one that does not exist.
    assert hidden.replace("jarvis_server", "X") == unknown.replace("no_such_tool", "X")
    assert "not found" in load_hidden
    # Called, it is refused as every door refuses it (decision 0065): naming the scopes that would allow the call, as
    # /mcp/jarvis answers the same call.
    assert call_hidden.startswith("your token's scopes (jarvis:jarvis_profile) do not allow jarvis_server action=list")
    assert "jarvis:jarvis_server:list" in call_hidden
    assert "profiles" in profiles


async def test_action_scopes_and_read_tokens(secured: RunningJarvis) -> None:
    read = secured.create_token("read", name="reader")
    async with discovery_client(secured.url("/mcp"), token=read) as client:
        found = await _found(client, "servers profiles config share system status")
        # Tools with read-only actions are visible; jarvis_system has none; catalog tools need `servers`.
        assert "jarvis_server" in found
        assert "jarvis_system" not in found
        assert not any("__" in name for name in found)
        denied = error_text(
            await client.call_tool(
                "tool_call", {"name": "jarvis_profile", "arguments": {"action": "create", "name": "x"}}
            )
        )
    assert "do not allow jarvis_profile action=create" in denied
    downstream = secured.create_token("servers:filesystem", name="filesystem-only")
    async with discovery_client(secured.url("/mcp"), token=downstream) as client:
        found = await _found(client, "read text file directory list")
    assert found
    assert all(name.startswith("filesystem__") for name in found)


async def test_installing_a_server_makes_its_tools_findable_at_once(jarvis: RunningJarvis) -> None:
    async with discovery_client(jarvis.url("/mcp")) as finder, discovery_client(jarvis.url()) as admin:
        before = await _describe(finder, "fetch__fetch")
        assert before["callable"] is False
        assert "not installed" in before["install_hint"]
        installed = await call(admin, "jarvis_server", {"action": "install", "name": "fetch", "new_name": "web"})
        assert installed["installed"]["name"] == "web"
        found = await _found(finder, "fetch url web page")
        assert "web__fetch" in found
        assert "fetch__fetch" not in found
        after = await _describe(finder, "web__fetch")
        assert after["source"] == "web"
        assert after["callable"] is True  # through the aggregator's downstream host
        await call(admin, "jarvis_server", {"action": "uninstall", "name": "web"})
        found = await _found(finder, "fetch url web page")
        assert "fetch__fetch" in found
        assert "web__fetch" not in found


async def _describe(client: Client, name: str) -> dict[str, Any]:
    return dict(await call(client, "tool_describe", {"name": name}))
