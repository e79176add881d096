"""The manifest (.agent/index.agent.md) documents exactly the tools the server registers."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from project_mcp_server import manifest
from project_mcp_server.config import ServerConfig
from project_mcp_server.tools import register_all_tools


def test_manifest_matches_registered_tools() -> None:
    tools = register_all_tools(ServerConfig(root=Path(__file__).resolve().parents[2]))
    described = [{"name": t.name, "description": t.description, "inputSchema": t.input_schema} for t in tools]
    assert manifest.problems(manifest.MANIFEST.read_text(encoding="utf-8"), described) == []


def test_every_schema_property_has_a_description() -> None:
    for tool in register_all_tools(ServerConfig(root=Path.cwd())):
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
