"""A scripted fake of the Anthropic Messages API, as Claude Code calls it (streaming SSE), for tests on loopback.

The script: a turn whose last message is the user's prompt gets a `Write` tool use that creates `FILE` in the
agent's working directory (read from the system prompt Claude Code sends); a turn that carries the tool's result
gets the final text. Any other call (a title, a quota probe) gets a short text. Every request is recorded with
its headers so a test can see the key the agent sent.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

FILE = "HELLO.md"
CONTENT = "written by the agent through the fake model API\n"
FINAL = "Done: wrote HELLO.md."
MODEL = "claude-fake-1"


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass(frozen=True)
class ToolResult:
    text: str
    is_error: bool


@dataclass
class RecordingFake:
    requests: list[Recorded] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, request: Recorded) -> None:
        with self.lock:
            self.requests.append(request)

    def keys(self) -> set[str]:
        """The API keys the agent sent (x-api-key or a bearer token)."""
        found = set()
        for r in self.requests:
            if "x-api-key" in r.headers:
                found.add(r.headers["x-api-key"])
            auth = r.headers.get("authorization", "")
            if auth.lower().startswith("bearer "):
                found.add(auth[7:])
        return found

    def app(self) -> Starlette:
        raise NotImplementedError


class AnthropicFake(RecordingFake):
    def app(self) -> Starlette:
        async def messages(request: Request) -> Response:
            body = await request.json()
            self.record(Recorded(request.url.path, dict(request.headers), body))
            if request.url.path.endswith("/count_tokens"):
                return JSONResponse({"input_tokens": 42})
            blocks = self.reply(body)
            if body.get("stream"):
                return StreamingResponse(sse(blocks), media_type="text/event-stream")
            return JSONResponse(message(blocks, stop_reason(blocks)))

        return Starlette(
            routes=[
                Route("/v1/messages", messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", messages, methods=["POST"]),
            ]
        )

    def reply(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        return reply(body)


class ScriptedToolsFake(AnthropicFake):
    """A model that makes the tool calls it is given, one a turn, in order, then answers `final`: the n-th call
    once the conversation holds n tool results. A request that does not offer the next call's tool (a title, a
    quota probe) gets a short text."""

    def __init__(self, calls: list[tuple[str, dict[str, Any]]], final: str = FINAL) -> None:
        super().__init__()
        self.calls = calls
        self.final = final

    def reply(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        done = len(tool_results(body))
        if done >= len(self.calls):
            return [{"type": "text", "text": self.final}]
        name, arguments = self.calls[done]
        if name not in {t.get("name") for t in body.get("tools", [])}:
            return [{"type": "text", "text": "ok"}]
        return [{"type": "tool_use", "id": f"toolu_fake_{done}", "name": name, "input": arguments}]

    def results(self) -> list[ToolResult]:
        """What the agent sent back for each call, in the script's order (a call it never answered is missing)."""
        found: dict[str, ToolResult] = {}
        for request in self.requests:
            for block in tool_results(request.body):
                found[str(block.get("tool_use_id"))] = ToolResult(
                    _text_of(block.get("content")), bool(block.get("is_error"))
                )
        return [found[f"toolu_fake_{n}"] for n in range(len(self.calls)) if f"toolu_fake_{n}" in found]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content or [])


def _working_dir(body: dict[str, Any]) -> str:
    system = body.get("system", "")
    text = system if isinstance(system, str) else " ".join(str(b.get("text", "")) for b in system)
    text += " ".join(_text_of(m.get("content")) for m in body.get("messages", []))
    found = re.search(r"working directory: (/\S+)", text, re.IGNORECASE)
    return found.group(1) if found else "/workspace"


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool result blocks anywhere in the conversation (Claude Code may end it with a system turn)."""
    return [
        b
        for m in body.get("messages", [])
        if isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


def reply(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The content blocks of the fake model's answer to one request."""
    if tool_results(body):
        return [{"type": "text", "text": FINAL}]
    tools = {t.get("name") for t in body.get("tools", [])}
    if "Write" in tools:
        path = f"{_working_dir(body).rstrip('/')}/{FILE}"
        return [
            {"type": "text", "text": "I will write the file."},
            {
                "type": "tool_use",
                "id": "toolu_fake_1",
                "name": "Write",
                "input": {"file_path": path, "content": CONTENT},
            },
        ]
    return [{"type": "text", "text": "ok"}]


def stop_reason(blocks: list[dict[str, Any]]) -> str:
    return "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"


def message(blocks: list[dict[str, Any]], stop: str | None) -> dict[str, Any]:
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def sse(blocks: list[dict[str, Any]]) -> Iterator[bytes]:
    """The answer as Messages API stream events: each block started, its delta, stopped; then the stop reason."""

    def event(kind: str, data: dict[str, Any]) -> bytes:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()

    start = message([], None)
    start["usage"] = {"input_tokens": 10, "output_tokens": 1}
    yield event("message_start", {"message": start})
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            yield event("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
            yield event("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": block["text"]}})
        else:
            yield event("content_block_start", {"index": index, "content_block": {**block, "input": {}}})
            yield event(
                "content_block_delta",
                {"index": index, "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}},
            )
        yield event("content_block_stop", {"index": index})
    yield event(
        "message_delta",
        {"delta": {"stop_reason": stop_reason(blocks), "stop_sequence": None}, "usage": {"output_tokens": 5}},
    )
    yield event("message_stop", {})
