"""The server's tools. To add one, write `tools/my_tool.py` with a `tool(config) -> ToolDef`
function and append `my_tool.tool(config)` in `register_all_tools` below; then add its row to
`.agent/index.agent.md` (the manifest test fails until you do)."""

from __future__ import annotations

from project_mcp_server.config import ServerConfig
from project_mcp_server.tools import capture_trace, db_bridge, get_logs, inspect_state, run_test_task
from project_mcp_server.tools.base import ToolDef


def register_all_tools(config: ServerConfig) -> list[ToolDef]:
    """Every tool the server exposes, in the order `tools/list` shows them."""
    return [
        inspect_state.tool(config),
        run_test_task.tool(config),
        db_bridge.tool(config),
        capture_trace.tool(config),
        get_logs.tool(config),
    ]
