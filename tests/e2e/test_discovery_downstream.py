"""Discovery over real downstream servers: found, loaded and called through the aggregator's host."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp_types import TextContent

from tests.support.discovery import call, discovery_client, names
from tests.support.downstream import FAST_ENV, TOY, create_toy, eventually, time_server
from tests.support.stack import error_text, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio


async def test_downstream_tools_are_found_called_and_scoped(tmp_path: Path) -> None:
    running = start_jarvis(tmp_path / "data", "--require-auth", env={"HOME": str(tmp_path), **FAST_ENV})
    try:
        admin = running.create_token("admin", name="admin")
        async with mcp_client(running.url(), admin) as jarvis:
            # Bootstrap installed `time` from the catalog; run the copy pinned in the venv.
            result_json(
                await jarvis.call_tool(
                    "jarvis_server", {"action": "edit", "name": "time", "command": time_server(), "args": []}
                )
            )
            await create_toy(jarvis, "toy")
        clock = running.create_token("servers:time", name="clock-only")
        async with discovery_client(running.url("/mcp"), token=clock) as client:
            found = (await call(client, "tool_find", {"query": "current time in a timezone", "limit": 5}))["results"]
            assert found[0]["name"] == "time__get_current_time"
            assert found[0]["callable"] is True
            assert all(r["name"].startswith("time__") for r in found)
            now = await client.call_tool(
                "tool_call", {"name": "time__get_current_time", "arguments": {"timezone": "UTC"}}
            )
            assert not now.is_error, now.content
            now_block = now.content[0]
            assert isinstance(now_block, TextContent), now_block
            assert "UTC" in now_block.text
            wrong = error_text(
                await client.call_tool("tool_call", {"name": "time__get_current_time", "arguments": {"timezone": 5}})
            )
            missing = error_text(
                await client.call_tool("tool_call", {"name": "time__get_current_time", "arguments": {}})
            )
            hidden = error_text(await client.call_tool("tool_describe", {"name": "toy__echo"}))
            await call(client, "tool_load", {"names": ["time__convert_time"]})
            assert "time__convert_time" in await names(client)
            converted = await client.call_tool(
                "time__convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Europe/Paris"}
            )
            assert not converted.is_error, converted.content
        assert "parameter 'timezone'" in wrong
        assert "'timezone' is a required property" in missing
        assert "not found" in hidden
        async with mcp_client(running.url(), admin) as jarvis:
            # The downstream call made through discovery's tool_call is in the audit log: who, what, which server.
            async def audited() -> bool:
                entries = result_json(
                    await jarvis.call_tool("jarvis_server", {"action": "usage", "audit": True, "query": "clock-only"})
                )["audit"]
                return any(
                    e["surface"] == "discovery"
                    and e["tool"] == "time__get_current_time"
                    and e["target"] == "time"
                    and e["arguments"] == {"timezone": "UTC"}
                    and e["outcome"] == "ok"
                    for e in entries
                )

            await eventually(audited, what="the discovery pass-through call in the audit log")
        async with discovery_client(running.url("/mcp"), token=admin) as client:
            # A server created by hand declares no tools: the host starts it once and discovery learns them.
            async def echo_found() -> bool:
                results = (await call(client, "tool_find", {"query": "echo text back"}))["results"]
                return any(r["name"] == "toy__echo" for r in results)

            await eventually(echo_found, what="toy__echo in tool_find")
            echoed = await client.call_tool("tool_call", {"name": "toy__echo", "arguments": {"text": "hello"}})
            # The server breaks: its tools stay findable, but not callable, and say why.
            async with mcp_client(running.url(), admin) as jarvis:
                result_json(
                    await jarvis.call_tool(
                        "jarvis_server", {"action": "edit", "name": "toy", "args": [str(TOY), "exit"]}
                    )
                )
            await client.call_tool("tool_call", {"name": "toy__echo", "arguments": {"text": "again"}})

            async def echo_not_callable() -> Any:
                results = (await call(client, "tool_find", {"query": "echo text back"}))["results"]
                hit: dict[str, Any] = next((r for r in results if r["name"] == "toy__echo"), {})
                return hit if hit.get("callable") is False else None

            broken = await eventually(echo_not_callable, what="toy__echo not callable once failing")
            refused = error_text(
                await client.call_tool("tool_call", {"name": "toy__echo", "arguments": {"text": "again"}})
            )
        assert "failing" in broken["install_hint"]
        assert "jarvis_server action=info name=toy" in broken["install_hint"]
        assert "failing" in refused
        echoed_block = echoed.content[0]
        assert isinstance(echoed_block, TextContent), echoed_block
        assert "hello" in echoed_block.text
    finally:
        running.stop()
