"""Helpers for the discovery surface's tests: an SDK client that records notifications, and its session id."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.support.stack import result_json

# The default surface's own tools, in the order it lists them.
DISCOVERY_TOOLS = ["tool_find", "tool_describe", "tool_load", "tool_active", "tool_call", "code_run"]


@dataclass
class Recorder:
    """Every server notification a client received, in order, and the session id it was given."""

    notifications: list[Any] = field(default_factory=list)
    session_id: str | None = None

    async def on_response(self, response: httpx2.Response) -> None:
        self.session_id = response.headers.get("mcp-session-id") or self.session_id

    async def __call__(self, message: Any) -> None:
        if isinstance(getattr(message, "method", None), str):  # notifications (requests are answered elsewhere)
            self.notifications.append(message)

    def tool_list_changes(self) -> int:
        return sum(1 for n in self.notifications if getattr(n, "method", "") == "notifications/tools/list_changed")


@asynccontextmanager
async def discovery_client(
    url: str,
    *,
    token: str | None = None,
    mode: str = "legacy",
    session_id: str | None = None,
    recorder: Recorder | None = None,
    keep_session: bool = False,
    fresh_connections: bool = False,
) -> AsyncIterator[Client]:
    """The SDK client over real HTTP. `session_id` reconnects to an existing session (sent on every
    request); `keep_session` leaves the session open on exit instead of sending DELETE;
    `fresh_connections` opens a connection per request (workers sharing a port each take some)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if session_id:
        headers["Mcp-Session-Id"] = session_id
    recorder = recorder if recorder is not None else Recorder()
    options: dict[str, Any] = {"limits": httpx2.Limits(max_keepalive_connections=0)} if fresh_connections else {}
    async with httpx2.AsyncClient(
        headers=headers, timeout=60, event_hooks={"response": [recorder.on_response]}, **options
    ) as http:
        transport = streamable_http_client(url, http_client=http, terminate_on_close=not keep_session)
        async with Client(transport, mode=mode, message_handler=recorder) as client:
            yield client


async def names(client: Client) -> list[str]:
    return [t.name for t in (await client.list_tools()).tools]


async def call(client: Client, tool: str, arguments: dict[str, Any] | None = None) -> Any:
    return result_json(await client.call_tool(tool, arguments or {}))


def listing_bytes(listed: types.ListToolsResult) -> int:
    """The bytes of a tools/list answer as the surface budgets count it: its compact JSON, annotations included,
    without the tools' `_meta`, which MCP reserves for client and server (Claude Code reads `anthropic/alwaysLoad`
    from it; no client shows it to a model). What a model itself reads is `model_definitions`."""
    tools = [tool.model_copy(update={"meta": None}) for tool in listed.tools]
    answer = listed.model_copy(update={"tools": tools}).model_dump(mode="json", by_alias=True, exclude_none=True)
    return len(json.dumps(answer, separators=(",", ":")).encode())


def model_definitions(listed: types.ListToolsResult) -> list[dict[str, Any]]:
    """The tool definitions a client gives its model from a tools/list answer: each tool's name, description and
    input schema. Claude Code sends just these to the Messages API (tests/e2e/test_code_mode_claude.py holds it to
    that); OpenAI's and Gemini's function declarations carry the same three. Annotations and `_meta` stay with the
    client."""
    return [
        {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema} for tool in listed.tools
    ]


def definitions_bytes(listed: types.ListToolsResult) -> int:
    return len(json.dumps(model_definitions(listed), separators=(",", ":")).encode())
