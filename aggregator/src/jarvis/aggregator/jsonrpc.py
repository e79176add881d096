"""The gate's view of a request body: its JSON-RPC messages, parsed once, with nesting bounded.

Python's JSON parser recurses once per nesting level, so a 2 KB body of 1,000 `[` reaches the
interpreter's recursion limit. No MCP message needs more than a few levels of structure around its
arguments, so bodies nested deeper than `MAX_DEPTH` are refused as a parse error before anything
(the parser, the SDK, a tool) walks them.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

from starlette.responses import JSONResponse, Response

MAX_DEPTH = 64
PARSE_ERROR = -32700

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


class BodyTooDeep(ValueError):
    """The body nests arrays or objects deeper than the gate allows."""


def nesting_depth(body: bytes) -> int:
    """How deep `body` nests arrays and objects (brackets inside strings do not count)."""
    brackets = _STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    return max(accumulate(1 if c in b"[{" else -1 for c in brackets), default=0)


def json_rpc_messages(body: bytes, max_depth: int = MAX_DEPTH) -> list[Any]:
    """The JSON-RPC messages of a request body; [] if it is not JSON (the MCP layer answers that).

    Raises BodyTooDeep for a body nested deeper than `max_depth`.
    """
    # Counting is C-speed; the depth scan only runs for bodies with enough brackets to be deep.
    if body.count(b"[") + body.count(b"{") > max_depth and nesting_depth(body) > max_depth:
        raise BodyTooDeep(f"Parse error: JSON nested deeper than {max_depth} levels")
    try:
        payload = json.loads(body) if body else None
    except (ValueError, RecursionError):
        return []
    if payload is None:
        return []
    return payload if isinstance(payload, list) else [payload]


def tool_calls(messages: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    """The (tool name, arguments) of every tools/call among `messages`."""
    calls = []
    for message in messages:
        if isinstance(message, dict) and message.get("method") == "tools/call":
            params = message.get("params") or {}
            if isinstance(params, dict) and isinstance(params.get("name"), str):
                args = params.get("arguments")
                calls.append((params["name"], args if isinstance(args, dict) else {}))
    return calls


def single_request_id(messages: list[Any]) -> str | int | None:
    """The id of the body's one JSON-RPC request, or None for a batch, a notification or no request."""
    if len(messages) != 1 or not isinstance(messages[0], dict):
        return None
    request_id = messages[0].get("id")
    return request_id if isinstance(request_id, (str, int)) and not isinstance(request_id, bool) else None


def error_response(code: int, message: str, status: int) -> Response:
    """A JSON-RPC error with no request id (the request could not be read), as the SDK answers them."""
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}, status_code=status)


def tool_error_response(
    request_id: str | int, text: str, detail: dict[str, Any] | None = None, headers: dict[str, str] | None = None
) -> Response:
    """A tools/call answered by the gate itself: a tool execution error the agent reads, as MCP intends.

    HTTP error statuses are for the transport; SDK clients drop their bodies, so an agent told
    "403" never learns which scope it lacks.
    """
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": True}
    if detail:
        result["structuredContent"] = detail
    return JSONResponse({"jsonrpc": "2.0", "id": request_id, "result": result}, headers=headers)
