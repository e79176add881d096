"""The JSON-lines dialogue with an agent process: agent CLIs' stream-json, their own JSON events, or text.

stream-json input is what agent CLIs read with `--input-format stream-json`: one JSON object per
line, `{"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": …}]}}`.
Each output line that is a JSON object becomes an event of its `type`; anything else is `text`.
An agent asks its caller to run a tool with a `tool_request` (or a CLI's `control_request`) line
carrying a `request_id`; `caller_tool_response` answers it on the agent's stdin.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from jarvis.common.errors import InvalidArgument
from jarvis.runtime.domain.agents import redact_text, redact_value, secret_texts

STREAM_JSON = "stream-json"
TEXT = "text"
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


def parse_line(protocol: str, stream: str, line: bytes, redact: tuple[bytes, ...] = ()) -> tuple[str, Any]:
    """(event type, payload) of one output line, with the secret values `redact` masked.

    A JSON event is masked after it is decoded, every string in it (keys too), so a secret the agent's JSON
    escaped (`\\"`, `\\\\`, `\\u002d`) is masked as well as one written plainly; any other line is masked as
    text, escaped forms included (agents.redact_text)."""
    text = line.decode("utf-8", errors="replace")
    secrets = secret_texts(redact)
    if stream == "stderr":
        return "stderr", {"text": redact_text(text, secrets)}
    if protocol != TEXT and text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict):
            if secrets:
                value, changed = redact_value(value, secrets)
                if changed:
                    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
                if redact_text(text, secrets) != text:
                    # A secret spanning the event's own structure (`a","b`): the event cannot be kept as JSON.
                    return "text", {"text": redact_text(line.decode("utf-8", errors="replace"), secrets)}
            kind = value.get("type")
            kind = kind if isinstance(kind, str) and kind else "message"
            mapper = _DIALECTS.get(protocol)
            return mapper(kind, value, text) if mapper else (kind, text)
    return "text", {"text": redact_text(text, secrets)}


# Each CLI's own JSON events keep their payload; their type is mapped onto Jarvis's (`system`,
# `assistant`, `tool_use`, `tool_result`, `error`), and the event that ends a turn becomes a `result`
# shaped like Claude Code's (`subtype`, `is_error`, `result`, plus the CLI's `event`), which is what
# the scheduler and callers wait for. Types not listed keep the CLI's own name.


def _result(ok: bool, detail: Any, value: dict[str, Any]) -> tuple[str, Any]:
    return "result", {
        "subtype": "success" if ok else "error",
        "is_error": not ok,
        "result": detail if isinstance(detail, str) else json.dumps(detail),
        "event": value,
    }


def _codex(kind: str, value: dict[str, Any], text: str) -> tuple[str, Any]:
    item = value.get("item")
    item = item if isinstance(item, dict) else {}
    if kind == "turn.completed":
        return _result(True, "", value)
    if kind == "turn.failed":
        error = value.get("error")
        return _result(False, error.get("message", "") if isinstance(error, dict) else str(error or ""), value)
    if kind == "item.completed" and item.get("type") == "agent_message":
        return "assistant", text
    mapped = {"thread.started": "system", "error": "error", "item.started": "tool_use", "item.completed": "tool_result"}
    return mapped.get(kind, kind), text


def _gemini(kind: str, value: dict[str, Any], text: str) -> tuple[str, Any]:
    if kind == "result":
        ok = value.get("status", "success") == "success"
        return _result(ok, value.get("error") or value.get("response") or "", value)
    if kind == "message":
        return ("assistant" if value.get("role") == "assistant" else "user"), text
    return {"init": "system"}.get(kind, kind), text


def _opencode(kind: str, value: dict[str, Any], text: str) -> tuple[str, Any]:
    # `opencode run` has no turn-end event: its exit ends the session (and so the turn).
    return {"text": "assistant", "step_start": "system", "tool_use": "tool_use"}.get(kind, kind), text


_DIALECTS: dict[str, Callable[[str, dict[str, Any], str], tuple[str, Any]]] = {
    "codex-json": _codex,
    "gemini-json": _gemini,
    "opencode-json": _opencode,
}


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
        body: dict[str, Any] = (
            {"subtype": "error", "request_id": request_id, "error": result}
            if is_error
            else {"subtype": "success", "request_id": request_id, "response": result}
        )
        return _line({"type": "control_response", "response": body})
    return _line({"type": RESPONSE_EVENT, "request_id": request_id, "result": result, "is_error": is_error})
