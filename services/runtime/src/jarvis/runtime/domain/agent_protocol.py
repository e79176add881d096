"""The JSON-lines dialogue with an agent process: agent CLIs' stream-json, or plain text lines.

stream-json input is what agent CLIs read with `--input-format stream-json`: one JSON object per
line, `{"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": …}]}}`.
Each output line that is a JSON object becomes an event of its `type`; anything else is `text`.
An agent asks its caller to run a tool with a `tool_request` (or a CLI's `control_request`) line
carrying a `request_id`; `caller_tool_response` answers it on the agent's stdin.
"""

from __future__ import annotations

import json
from typing import Any

from jarvis.common.errors import InvalidArgument

STREAM_JSON = "stream-json"
REQUEST_TYPES = ("tool_request", "control_request")
RESPONSE_EVENT = "tool_response"


def _line(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def encode_message(protocol: str, text: str) -> bytes:
    """The bytes written to the agent's stdin for one user message."""
    if protocol == STREAM_JSON:
        return _line({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}})
    # Plain text agents read lines: a newline inside a message would split it, so it is flattened.
    return text.replace("\r", " ").replace("\n", " ").encode() + b"\n"


def parse_line(protocol: str, stream: str, line: bytes) -> tuple[str, Any]:
    """(event type, payload) of one output line."""
    text = line.decode("utf-8", errors="replace")
    if stream == "stderr":
        return "stderr", {"text": text}
    if protocol == STREAM_JSON and text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict):
            kind = value.get("type")
            return (kind if isinstance(kind, str) and kind else "message"), text
    return "text", {"text": text}


def request_id_of(payload_json: str) -> str:
    try:
        value = json.loads(payload_json)
    except ValueError:
        return ""
    request_id = value.get("request_id") if isinstance(value, dict) else None
    return request_id if isinstance(request_id, str) else ""


def encode_tool_response(request_type: str, request_id: str, result_json: str, is_error: bool) -> bytes:
    """The answer to a tool request, in the dialect the request came in."""
    try:
        result = json.loads(result_json) if result_json.strip() else None
    except ValueError as exc:
        raise InvalidArgument(f"result must be JSON (got {exc}); wrap plain text in quotes") from exc
    if request_type == "control_request":
        body: dict[str, Any] = {"subtype": "error", "request_id": request_id, "error": result} if is_error else \
            {"subtype": "success", "request_id": request_id, "response": result}
        return _line({"type": "control_response", "response": body})
    return _line({"type": RESPONSE_EVENT, "request_id": request_id, "result": result, "is_error": is_error})
