"""The loopback listener a tunnel forwards to: the aggregator's own app, limited to one share's path.

The tunnel does not forward to Jarvis's main listener. Requests through it arrive from 127.0.0.1, which
on a loopback-open Jarvis would make a stranger on the far side the local admin of every surface. This
listener answers 404 to every path but `/share/<server>/mcp`, and that path always takes the share's
token, whoever connects. The far side's Host header names the far host; it is replaced by this listener's
own address, which the gate accepts: DNS rebinding cannot hurt a path that needs a bearer token.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Generator

import uvicorn
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send


class ShareOnly:
    """ASGI filter: one share's MCP path reaches `app`; anything else is 404 before authentication."""

    def __init__(self, app: ASGIApp, path: str, host: str) -> None:
        self.app = app
        self.path = path
        self.host = host.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # no lifespan or websockets here: the main listener runs the app's lifespan
        if scope.get("path", "").rstrip("/") != self.path:
            await JSONResponse({"error": "not_found", "message": f"only {self.path} is served here"}, status_code=404)(
                scope, receive, send
            )
            return
        headers = [(k, v) for k, v in scope.get("headers", []) if k != b"host"] + [(b"host", self.host)]
        await self.app({**scope, "headers": headers}, receive, send)


class _QuietServer(uvicorn.Server):
    """A uvicorn server that leaves signals to the main listener (several of these come and go)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class ShareListener:
    def __init__(self, app: ASGIApp, path: str) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]
        config = uvicorn.Config(
            ShareOnly(app, path, f"127.0.0.1:{self.port}"),
            lifespan="off",
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=2,
            # Every connection comes from the tunnel on 127.0.0.1, carrying whatever the far side's stranger sent:
            # no forwarded header is believed here, whatever proxies the main listener trusts.
            proxy_headers=False,
        )
        self._server = _QuietServer(config)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._server.serve(sockets=[self._socket]))
        while not self._server.started and not self._task.done():  # noqa: ASYNC110 - uvicorn has no event
            await asyncio.sleep(0.02)

    async def stop(self) -> None:
        self._server.should_exit = True
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task
        self._socket.close()
