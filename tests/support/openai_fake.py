"""A scripted fake of the OpenAI chat completions API, as Aider calls it through litellm, for tests on loopback.

Every completion answers with an Aider edit block that creates `FILE`; requests are recorded with their headers
so a test can see the key the agent sent.
"""

from __future__ import annotations

import json
import time
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support.anthropic_fake import CONTENT, FILE, Recorded, RecordingFake

# Aider's SEARCH/REPLACE format with an empty SEARCH: a new file.
EDIT = f"I will create the file.\n\n{FILE}\n```\n<<<<<<< SEARCH\n=======\n{CONTENT}>>>>>>> REPLACE\n```\n"


class OpenAIFake(RecordingFake):
    def app(self) -> Starlette:
        async def completions(request: Request) -> Response:
            body = await request.json()
            self.record(Recorded(request.url.path, dict(request.headers), body))
            answer = {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "gpt-fake"),
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": EDIT}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
            }
            if body.get("stream"):
                return StreamingResponse(_chunks(answer), media_type="text/event-stream")
            return JSONResponse(answer)

        async def models(request: Request) -> Response:
            return JSONResponse({"object": "list", "data": [{"id": "gpt-4o", "object": "model"}]})

        return Starlette(
            routes=[
                Route("/v1/chat/completions", completions, methods=["POST"]),
                Route("/chat/completions", completions, methods=["POST"]),
                Route("/v1/models", models),
                Route("/models", models),
            ]
        )


def _chunks(answer: dict[str, Any]) -> Any:
    delta = {
        **answer,
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": EDIT}, "finish_reason": None}],
    }
    yield f"data: {json.dumps(delta)}\n\n".encode()
    done = {**delta, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    yield f"data: {json.dumps(done)}\n\n".encode()
    yield b"data: [DONE]\n\n"
