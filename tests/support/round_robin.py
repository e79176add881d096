"""A balancer on loopback that sends each HTTP request to the next backend in turn: no affinity at all.

What it proves is that no request depends on which aggregator process answered the one before it.
Bodies stream both ways, so SSE answers pass through as they are written.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from typing import Any

import httpx2
import uvicorn
from starlette.types import Receive, Scope, Send

from tests.support.stack import free_port

_HOP_BY_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"content-length", b"te", b"upgrade"}


class RoundRobin:
    def __init__(self, backends: list[str]) -> None:
        self.backends = backends
        self._next = itertools.cycle(backends)
        self.served: Counter[str] = Counter()  # requests each backend was given
        self.port = free_port()
        self._server = uvicorn.Server(
            uvicorn.Config(
                self.app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off", interface="asgi3"
            )
        )
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> RoundRobin:
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if time.monotonic() > deadline:
                raise AssertionError("the round-robin balancer did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *_: object) -> None:
        self._server.should_exit = True
        self._thread.join(10)

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        backend = next(self._next)
        self.served[backend] += 1
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        url = backend + scope["path"] + (("?" + scope["query_string"].decode()) if scope["query_string"] else "")
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _HOP_BY_HOP]
        async with httpx2.AsyncClient(timeout=60) as client:
            request = client.build_request(scope["method"], url, headers=headers, content=body)
            response = await client.send(request, stream=True)
            try:
                answer: list[Any] = [(k, v) for k, v in response.headers.raw if k.lower() not in _HOP_BY_HOP]
                await send({"type": "http.response.start", "status": response.status_code, "headers": answer})
                async for chunk in response.aiter_raw():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
            finally:
                await response.aclose()
