"""The MCP server: tools/list from the tool table, tools/call with schema validation.

Built on the SDK's low-level `Server` because it does not validate arguments itself: this
module checks them against each tool's JSON schema so that a bad argument is a JSON-RPC
`-32602` error (spec 004), never a crash or a half-run tool.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio.to_thread
import mcp_types as types
from jsonschema import Draft202012Validator
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from project_mcp_server.config import ServerConfig
from project_mcp_server.schemas import SERVER_NAME, SERVER_VERSION
from project_mcp_server.tools import register_all_tools
from project_mcp_server.tools.base import InvalidParams, ToolDef, ToolError

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Introspection of this project: inspect_state reads live state, run_test_task runs pytest, "
    "db_bridge reads the SQLite database, capture_trace profiles, get_logs reads the NDJSON log. "
    "See mcp-server/.agent/index.agent.md."
)


def _defaults(schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    filled = {k: p["default"] for k, p in schema.get("properties", {}).items() if "default" in p}
    return {**filled, **arguments}


def _result(payload: dict[str, Any]) -> types.CallToolResult:
    text = json.dumps(payload, separators=(",", ":"), default=str)
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=payload)


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def build_server(config: ServerConfig, tools: list[ToolDef] | None = None) -> Server[Any]:
    """The MCP server over `tools` (default: `register_all_tools(config)`)."""
    table = {t.name: t for t in (tools if tools is not None else register_all_tools(config))}
    validators = {name: Draft202012Validator(t.input_schema) for name, t in table.items()}
    listing = [
        types.Tool(
            name=t.name,
            description=t.description,
            input_schema=t.input_schema,
            annotations=types.ToolAnnotations(read_only_hint=t.read_only),
        )
        for t in table.values()
    ]

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def on_call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = table.get(params.name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool '{params.name}'; available: {', '.join(table)}")
        arguments = dict(params.arguments or {})
        problems = sorted(validators[tool.name].iter_errors(arguments), key=lambda e: list(e.path))
        if problems:
            where = "/".join(str(p) for p in problems[0].path) or "arguments"
            raise MCPError(types.INVALID_PARAMS, f"invalid params for {tool.name}: {where}: {problems[0].message}")
        try:
            payload = await anyio.to_thread.run_sync(tool.handler, _defaults(tool.input_schema, arguments))
        except InvalidParams as exc:
            raise MCPError(types.INVALID_PARAMS, f"invalid params for {tool.name}: {exc}") from None
        except ToolError as exc:
            return _error(str(exc))
        except Exception:
            log.exception("tool %s failed", tool.name)
            return _error(f"{tool.name} failed unexpectedly; the server's stderr has the traceback")
        return _result(payload)

    return Server(
        SERVER_NAME,
        version=SERVER_VERSION,
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
