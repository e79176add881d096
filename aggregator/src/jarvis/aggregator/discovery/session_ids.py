"""Session ids for the discovery surface in stateless mode, so active tools survive across replicas.

Stateless streamable HTTP keeps no session, so the SDK hands out no `Mcp-Session-Id`. The
discovery surface still needs one to hang a session's loaded tools on. This middleware gives a
client that arrives without an id a fresh one on the response; clients send it back on every
request, any replica reads it, and the active set lives in Redis under it (keyed with the token,
see `discovery.sessions`). A client that brings an id keeps it, which is how a reconnecting client
gets its tools back.

A stateless replica cannot hold a server-to-client stream, so a GET is answered 405, as the
streamable HTTP transport specifies for servers that offer no such stream.
"""

from __future__ import annotations

import re
import uuid

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SESSION_HEADER = b"mcp-session-id"
# What an id a client brings may look like (visible ASCII per the transport spec; kept tighter here).
_VALID_ID = re.compile(rb"^[A-Za-z0-9._-]{8,128}$")


class StatelessSessionIds:
    """ASGI middleware for the paths in `paths`; everything else passes through untouched."""

    def __init__(self, app: ASGIApp, paths: set[str]) -> None:
        self.app = app
        self.paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path", "").rstrip("/") not in self.paths:
            await self.app(scope, receive, send)
            return
        if scope.get("method") == "GET":
            await Response(
                "this stateless server offers no server-to-client stream",
                status_code=405,
                headers={"Allow": "POST, DELETE"},
            )(scope, receive, send)
            return
        sent = dict(scope.get("headers") or []).get(SESSION_HEADER, b"")
        session_id = sent if _VALID_ID.match(sent) else uuid.uuid4().hex.encode()

        async def with_session_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                if not any(key.lower() == SESSION_HEADER for key, _ in headers):
                    headers.append((SESSION_HEADER, session_id))
                    message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_session_id)
