"""Names, descriptions and JSON input schemas of the five built-in tools (the manifest mirrors them).

Standard library only: Jarvis reads this file to describe the tools without importing the server.
Descriptions are the `Description` column of `.agent/index.agent.md`, word for word; a test keeps
them in sync.
"""

from __future__ import annotations

from typing import Any

SERVER_NAME = "project-mcp-server"
SERVER_VERSION = "0.1.0"

LOG_LEVELS = ("debug", "info", "warn", "error")
# Names inspect_state never reads or shows (case-insensitive search): the process environment and
# what looks like a credential. Jarvis's gateway refuses such paths before they reach a server,
# including servers scaffolded before this rule existed.
REFUSED_STATE_NAMES = (
    r"environ|passw|secret|token|credential|api_?key|private_?key|access_?key|authoriz|"
    r"cookie|session_?key|dsn|database_?url"
)


def _tool(description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        },
    }


TOOLS: dict[str, dict[str, Any]] = {
    "inspect_state": _tool(
        "Reads internal memory, cache values, or singleton states of the running application.",
        {
            "path": {
                "type": "string",
                "minLength": 1,
                "maxLength": 512,
                "description": "Dotted path to a registered state singleton or a module global, "
                "e.g. 'cache.users' or 'app.settings.DEBUG'",
            },
            "depth": {
                "type": "integer",
                "minimum": 1,
                "maximum": 10,
                "default": 3,
                "description": "How many levels of nested values to expand (1-10)",
            },
        },
        ["path"],
    ),
    "run_test_task": _tool(
        "Executes specific tests and returns machine-readable failure analysis.",
        {
            "test_path": {
                "type": "string",
                "description": "Test file, directory or pytest node id inside the project, "
                "e.g. 'tests/test_api.py::test_login'",
            },
            "reporter": {
                "type": "string",
                "enum": ["json", "tap"],
                "description": "Report format: 'json' (structured report) or 'tap' (adds TAP 13 text)",
            },
        },
        ["test_path", "reporter"],
    ),
    "db_bridge": _tool(
        "Direct access to the application's internal database for data-integrity verification.",
        {
            "action": {
                "type": "string",
                "enum": ["query", "schema", "seed"],
                "description": "'query' runs one read-only statement, 'schema' lists tables and columns, "
                "'seed' runs seed SQL in one transaction",
            },
            "payload": {
                "type": "string",
                "description": "query: the SQL; schema: a table name, or '' or '*' for all; seed: SQL statements, "
                "a .sql file inside the project, or '' for the configured seed file",
            },
        },
        ["action", "payload"],
    ),
    "capture_trace": _tool(
        "Generates a performance snapshot for the Refactor phase.",
        {
            "duration_ms": {
                "type": "integer",
                "minimum": 100,
                "maximum": 30000,
                "description": "How long to capture, in milliseconds (100-30000)",
            },
            "type": {
                "type": "string",
                "enum": ["cpu", "heap", "network"],
                "description": "'cpu' samples stacks, 'heap' diffs allocations (tracemalloc), "
                "'network' counts bytes per connection",
            },
        },
        ["duration_ms", "type"],
    ),
    "get_logs": _tool(
        "Streams structured application logs for runtime behavior analysis.",
        {
            "level": {
                "type": "string",
                "enum": list(LOG_LEVELS),
                "description": "Minimum level of the entries to return",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 500,
                "description": "How many of the newest matching entries to return (1-500)",
            },
            "follow": {
                "type": "boolean",
                "description": "Also wait briefly for entries appended during the call",
            },
        },
        ["level", "limit"],
    ),
}
