"""What Jarvis's own requests to a server share, over HTTP (http_calls.py) or a stdio pipe (pipe_calls.py): ids
apart from the SDK session's, and answers and progress reports read as the SDK's dispatcher reads them."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from jarvis.aggregator.tooling.json_types import JsonObject

log = logging.getLogger(__name__)

Heard = Callable[[str, JsonObject | None], Awaitable[None]]  # a server's notification, for connection.py's `heard`
FIRST_ID = 1 << 40  # ids of their own, apart from the SDK session's counter that shares the server
CANCELLED = "notifications/cancelled"
PROGRESS = "notifications/progress"


def parsed(text: str | bytes) -> JsonObject:
    """One JSON-RPC message; MCPError as the SDK's transports raise it for a message that does not parse."""
    try:
        message = json.loads(text)
    except ValueError as exc:
        raise MCPError(code=types.PARSE_ERROR, message=f"Failed to parse JSON response: {exc}") from None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise MCPError(code=types.PARSE_ERROR, message="Failed to parse JSON response: not a JSON-RPC message")
    return message


def is_error(error: Any) -> bool:
    return isinstance(error, dict) and isinstance(error.get("code"), int) and isinstance(error.get("message"), str)


def outcome(message: JsonObject, request_id: int) -> JsonObject:
    """The result of the response to `request_id`, or its error raised as the SDK's dispatcher raises it."""
    if message.get("id") != request_id:
        raise MCPError(code=types.INTERNAL_ERROR, message="the server answered with another request's id")
    return result_of(message)


def result_of(message: JsonObject) -> JsonObject:
    """A response's result, or its error raised as the SDK's dispatcher raises it."""
    if "error" in message:
        error = message["error"]
        if not is_error(error):
            raise MCPError(code=types.PARSE_ERROR, message="Failed to parse JSON response: a malformed error")
        raise MCPError(code=error["code"], message=error["message"], data=error.get("data"))
    result = message.get("result")
    if not isinstance(result, dict):
        raise MCPError(code=types.PARSE_ERROR, message="Failed to parse JSON response: the result is not an object")
    return result


def with_progress_token(params: JsonObject | None, request_id: int) -> JsonObject:
    """`params` asking for progress reports: the request's id is their token, as the SDK's dispatcher sends it."""
    return {**(params or {}), "_meta": {**((params or {}).get("_meta") or {}), "progressToken": request_id}}


def progress_token(params: Any) -> int | None:
    """The request id a progress report names, if it names one the way Jarvis's tokens are made."""
    token = params.get("progressToken") if isinstance(params, dict) else None
    return token if isinstance(token, int) and not isinstance(token, bool) else None


async def relay_progress(server: str, params: Any, request_id: int, progress: ProgressFnT | None) -> None:
    """A progress report for `request_id`, checked as the SDK's dispatcher checks it; others are dropped."""
    match params:
        case {"progress": int() | float() as done} if (
            progress_token(params) == request_id and progress is not None and not isinstance(done, bool)
        ):
            total, text = params.get("total"), params.get("message")
            try:
                await progress(
                    float(done),
                    float(total) if isinstance(total, int | float) and not isinstance(total, bool) else None,
                    text if isinstance(text, str) else None,
                )
            except Exception:  # a failing relay costs the report, not the call
                log.exception("progress relay for server %s failed", server)
        case _:
            log.debug("server %s sent progress for no request of Jarvis's; dropped", server)
