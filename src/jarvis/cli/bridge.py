"""`jarvis mcp` in front of a running `jarvis up`: its stdio relayed to one surface over streamable HTTP.

Messages pass through unchanged in both directions (requests, responses, notifications, and the
server's own requests such as sampling), so the client talks to the running Jarvis as if it were
local, and nothing of it (runtime, containers, sessions) is started twice.
"""

from __future__ import annotations

import logging

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client
from mcp.server.stdio import stdio_server

log = logging.getLogger(__name__)


async def bridge_stdio(url: str, token: str = "") -> None:
    """Relay stdin/stdout to the MCP endpoint `url` until stdin closes or the server goes away."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    # Reads wait long: a tool call's answer may stream for minutes.
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=600)) as http,
        streamable_http_client(url, http_client=http) as (remote_in, remote_out),
        stdio_server() as (local_in, local_out),
        anyio.create_task_group() as tasks,
    ):

        async def upstream() -> None:
            async for message in local_in:
                if isinstance(message, Exception):  # a line that is not JSON-RPC: the stdio server said so
                    log.warning("ignored a malformed message from the client", extra={"error": str(message)})
                    continue
                await remote_out.send(message)
            tasks.cancel_scope.cancel()  # the client closed stdin: done

        async def downstream() -> None:
            async for message in remote_in:
                if isinstance(message, Exception):
                    log.warning("error from the running Jarvis", extra={"error": str(message)})
                    continue
                await local_out.send(message)
            tasks.cancel_scope.cancel()

        tasks.start_soon(upstream)
        tasks.start_soon(downstream)
