"""What a tool is, and the two ways a tool call can fail."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from project_mcp_server.schemas import TOOLS

Handler = Callable[[dict[str, Any]], dict[str, Any]]


class ToolError(Exception):
    """The call was valid but could not be carried out; the agent sees an `isError` result."""


class InvalidParams(ToolError):
    """An argument passed the schema but is still unacceptable (e.g. a path outside the project).

    Reported as JSON-RPC error -32602, like schema violations.
    """


@dataclass(frozen=True)
class ToolDef:
    """One tool: its MCP definition and a synchronous handler (run in a worker thread).

    Handlers receive arguments already validated against `input_schema`, with schema defaults
    filled in, and return a JSON-serialisable object.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler
    read_only: bool = False


def builtin(name: str, handler: Handler, *, read_only: bool) -> ToolDef:
    """A built-in tool, its description and schema taken from `schemas.TOOLS`."""
    spec = TOOLS[name]
    return ToolDef(name, spec["description"], spec["inputSchema"], handler, read_only)
