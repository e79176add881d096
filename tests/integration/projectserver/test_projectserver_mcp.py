"""Spec 004 over real stdio: initialize, tools/list schemas exactly as specified, -32602 for bad params."""

from __future__ import annotations

import re
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio

SEMVER = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")
DESCRIPTIONS = {
    "inspect_state": "Reads internal memory, cache values, or singleton states of the running application.",
    "run_test_task": "Executes specific tests and returns machine-readable failure analysis.",
    "db_bridge": "Direct access to the application's internal database for data-integrity verification.",
    "capture_trace": "Generates a performance snapshot for the Refactor phase.",
    "get_logs": "Streams structured application logs for runtime behavior analysis.",
}


async def _schemas(client: Client) -> dict[str, dict[str, Any]]:
    return {t.name: t.input_schema for t in (await client.list_tools()).tools}


async def test_initialize_identifies_the_server(client: Client) -> None:
    assert client.server_info is not None
    assert client.server_info.name == "project-mcp-server"
    assert SEMVER.match(client.server_info.version)
    assert client.server_capabilities.tools is not None


async def test_tools_list_has_the_five_tools_with_the_manifest_descriptions(client: Client) -> None:
    tools = (await client.list_tools()).tools
    assert {t.name: t.description for t in tools} == DESCRIPTIONS
    for tool in tools:
        assert tool.input_schema["type"] == "object"
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description", "").strip(), f"{tool.name}.{name} has no description"


async def test_schemas_are_exactly_as_spec_004_lists_them(client: Client) -> None:
    schemas = await _schemas(client)

    def shape(tool: str) -> dict[str, Any]:
        schema = schemas[tool]
        props = {n: {k: v for k, v in p.items() if k != "description"} for n, p in schema["properties"].items()}
        return {"properties": props, "required": sorted(schema["required"])}

    assert shape("inspect_state") == {
        "properties": {
            "path": {"type": "string", "minLength": 1, "maxLength": 512},
            "depth": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
        },
        "required": ["path"],
    }
    assert shape("run_test_task") == {
        "properties": {"test_path": {"type": "string"}, "reporter": {"type": "string", "enum": ["json", "tap"]}},
        "required": ["reporter", "test_path"],
    }
    assert shape("db_bridge") == {
        "properties": {
            "action": {"type": "string", "enum": ["query", "schema", "seed"]},
            "payload": {"type": "string"},
        },
        "required": ["action", "payload"],
    }
    assert shape("capture_trace") == {
        "properties": {
            "duration_ms": {"type": "integer", "minimum": 100, "maximum": 30000},
            "type": {"type": "string", "enum": ["cpu", "heap", "network"]},
        },
        "required": ["duration_ms", "type"],
    }
    assert shape("get_logs") == {
        "properties": {
            "level": {"type": "string", "enum": ["debug", "info", "warn", "error"]},
            "limit": {"type": "integer", "minimum": 1, "maximum": 500},
            "follow": {"type": "boolean"},
        },
        "required": ["level", "limit"],
    }


INVALID = [
    ("db_bridge", {"action": "DROP", "payload": "users"}),
    ("db_bridge", {"action": "query"}),
    ("inspect_state", {"path": "cache", "depth": 11}),
    ("inspect_state", {"path": "cache", "depth": 0}),
    ("inspect_state", {"path": "cache", "depth": "3"}),
    ("inspect_state", {"path": ""}),
    ("inspect_state", {"path": "x" * 513}),
    ("inspect_state", {"path": "cache..users"}),
    ("inspect_state", {}),
    ("inspect_state", {"path": "cache", "extra": 1}),
    ("run_test_task", {"test_path": "tests", "reporter": "xml"}),
    ("run_test_task", {"test_path": "../outside", "reporter": "json"}),
    ("run_test_task", {"test_path": "tests/missing_test.py", "reporter": "json"}),
    ("capture_trace", {"duration_ms": 99, "type": "cpu"}),
    ("capture_trace", {"duration_ms": 30001, "type": "cpu"}),
    ("capture_trace", {"duration_ms": 500, "type": "gpu"}),
    ("get_logs", {"level": "fatal", "limit": 5}),
    ("get_logs", {"level": "info", "limit": 0}),
    ("get_logs", {"level": "info", "limit": 501}),
    ("get_logs", {"level": "info"}),
    ("get_logs", {"level": "info", "limit": 5, "follow": "yes"}),
    ("no_such_tool", {}),
]


@pytest.mark.parametrize(("tool", "arguments"), INVALID, ids=[f"{t}-{i}" for i, (t, _) in enumerate(INVALID)])
async def test_invalid_params_are_json_rpc_invalid_params(client: Client, tool: str, arguments: dict[str, Any]) -> None:
    with pytest.raises(MCPError) as caught:
        await client.call_tool(tool, arguments)
    assert caught.value.code == -32602
    # The server is still there and answering after every rejection.
    assert (await client.call_tool("inspect_state", {"path": "cache.7"})).structured_content == {
        "value": "seven",
        "type": "str",
    }
