"""The AOD manifest (.agent/index.agent.md) is complete and says what the live server and the lifecycle do."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mcp import Client

from jarvis.projectserver.lifecycle import CRASH_EVENT, GRACE_SECONDS

pytestmark = pytest.mark.anyio

TOOLS = ["inspect_state", "run_test_task", "db_bridge", "capture_trace", "get_logs"]


def _manifest(project: Path) -> str:
    return (project / "mcp-server" / ".agent" / "index.agent.md").read_text()


def _section(text: str, heading: str) -> str:
    return text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]


def _rows(text: str) -> dict[str, list[str]]:
    lines = [line for line in _section(text, "## Tools").splitlines() if line.startswith("|")]
    cells = [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines]
    assert cells[0] == ["Tool", "Parameters", "Return Type", "Description"]
    assert all(re.fullmatch(r"-+", c) for c in cells[1])
    assert all(len(row) == 4 for row in cells), "a row with the wrong number of cells breaks the table"
    return {row[0].strip("`"): row[1:] for row in cells[2:]}


def test_sections_and_one_row_per_tool(project: Path) -> None:
    text = _manifest(project)
    for heading in ("## Tools", "## Introspection Points", "## Lifecycle", "## Extension"):
        assert f"\n{heading}\n" in text
    assert list(_rows(text)) == TOOLS
    points = [line for line in _section(text, "## Introspection Points").splitlines() if line.startswith("- ")]
    for tool in TOOLS:
        assert [p for p in points if f"(`{tool}`)" in p], f"no Introspection Points bullet for {tool}"
    assert all(line == line.rstrip() for line in text.splitlines()), "trailing spaces"


async def test_manifest_matches_the_live_tools_list(client: Client, project: Path) -> None:
    rows = _rows(_manifest(project))
    for tool in (await client.list_tools()).tools:
        parameters, return_type, description = rows[tool.name]
        assert description == tool.description
        assert return_type
        required = set(tool.input_schema.get("required", []))
        for name in tool.input_schema["properties"]:
            marker = f"`{name}:" if name in required else f"`{name}?:"
            assert marker in parameters, f"{tool.name}: {name} should be listed as {marker}"
        listed = re.findall(r"`(\w+)\??:", parameters)
        assert sorted(listed) == sorted(tool.input_schema["properties"]), f"{tool.name} lists {listed}"


def test_lifecycle_section_matches_the_manager(project: Path) -> None:
    lifecycle = " ".join(_section(_manifest(project), "## Lifecycle").split())
    assert "ProjectServerLifecycleManager.start()" in lifecycle
    assert "ProjectServerLifecycleManager.stop()" in lifecycle
    assert "MCP `initialize` handshake before reporting ready" in lifecycle
    assert f"SIGKILL is issued after a {GRACE_SECONDS:g}-second grace period" in lifecycle
    assert "A SIGTERM is sent to its process group first" in lifecycle
    assert f'`"{CRASH_EVENT}"` event' in lifecycle
    assert "exit code" in lifecycle
    assert "stderr" in lifecycle
