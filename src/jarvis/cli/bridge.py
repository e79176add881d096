"""`jarvis mcp` in front of a running `jarvis up`: its stdio relayed to one surface over streamable HTTP.

Messages pass through unchanged in both directions (requests, responses, notifications, and the
server's own requests such as sampling), so the client talks to the running Jarvis as if it were
local, and nothing of it (runtime, containers, sessions) is started twice.

When the client closes stdin, the requests it already sent are answered first (a script may write its requests and
close), then the relay ends within a second. A Jarvis that refuses the relay's token is asked once, before any
relaying: every request is then answered with an error that says which variable to set and how to get a token.
"""

from __future__ import annotations

import contextlib
import logging
import sys

import anyio
import httpx2
import mcp_types as types
from mcp.client.streamable_http import streamable_http_client
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

log = logging.getLogger(__name__)

# JSON-RPC's implementation-defined server errors: this one says the relay was not let in.
NOT_AUTHORIZED = -32003
CLOSE_SECONDS = 1.0  # how long ending the HTTP session may take once the client has gone


async def bridge_stdio(url: str, token: str = "", command: str = "jarvis") -> None:
    """Relay stdin/stdout to the MCP endpoint `url` until stdin closes (and what was asked is answered) or the
    server goes away. `command` runs this Jarvis's CLI as a person types it (banner.invocation), for hints."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    # Reads wait long: a tool call's answer may stream for minutes.
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=600)) as http:
        refusal = await _refusal(http, url, bool(token), command)
        if refusal is not None:
            print(f"jarvis mcp: {refusal}", file=sys.stderr, flush=True)
            await _refuse_every_request(refusal)
            return
        await _relay(http, url)


async def _refusal(http: httpx2.AsyncClient, url: str, has_token: bool, command: str = "jarvis") -> str | None:
    """Why the running Jarvis will not let this relay in, asked with a ping before anything is relayed."""
    try:
        answer = await http.post(
            url,
            json={"jsonrpc": "2.0", "id": 0, "method": "ping"},
            headers={"Accept": "application/json, text/event-stream"},
        )
    except httpx2.HTTPError:
        return None  # unreachable: the relay's own connection says so
    create = f"an admin creates one with `{command} token create --name NAME --scope SCOPE`"
    if answer.status_code == 401 and not has_token:
        return f"the Jarvis at {url} requires a token: set JARVIS_TOKEN in this server's environment ({create})"
    if answer.status_code == 401:
        return f"the Jarvis at {url} refused JARVIS_TOKEN (invalid, expired or revoked): set a valid one ({create})"
    if answer.status_code == 403:
        return f"JARVIS_TOKEN may not use {url}: {_message(answer)}"
    return None


def _message(answer: httpx2.Response) -> str:
    with contextlib.suppress(ValueError):
        body = answer.json()
        message = body.get("message") if isinstance(body, dict) else None
        if isinstance(message, str):
            return message
    return f"HTTP {answer.status_code}"


async def _refuse_every_request(reason: str) -> None:
    """Answer each request the client sends with `reason` until it closes stdin."""
    async with stdio_server() as (local_in, local_out), local_out:  # its writer ends when the stream is closed
        async for message in local_in:
            if isinstance(message, SessionMessage) and isinstance(message.message, types.JSONRPCRequest):
                error = types.ErrorData(code=NOT_AUTHORIZED, message=reason)
                await local_out.send(
                    SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=message.message.id, error=error))
                )


class _Pending:
    """The client's requests not answered yet: after stdin closes, the relay lasts until there are none."""

    def __init__(self) -> None:
        self._ids: set[types.RequestId] = set()
        self._none = anyio.Event()
        self._none.set()

    def sent(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCRequest):
            self._ids.add(message.id)
            self._none = anyio.Event()

    def answered(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self._ids.discard(message.id)
            if not self._ids:
                self._none.set()

    async def drained(self) -> None:
        while self._ids:
            await self._none.wait()


async def _relay(http: httpx2.AsyncClient, url: str) -> None:
    pending = _Pending()
    # Entered before the transports, so that once relaying is over it can bound their shutdown (ending the HTTP
    # session) to CLOSE_SECONDS without breaking the order their own cancel scopes are left in.
    with anyio.CancelScope() as closing:
        async with (
            streamable_http_client(url, http_client=http) as (remote_in, remote_out),
            stdio_server() as (local_in, local_out),
            local_out,  # stdio_server's writer ends only when this is closed: a relay whose client had gone lived on
            anyio.create_task_group() as tasks,
        ):

            def finish() -> None:
                closing.deadline = anyio.current_time() + CLOSE_SECONDS
                tasks.cancel_scope.cancel()

            async def upstream() -> None:
                async for message in local_in:
                    if isinstance(message, Exception):  # a line that is not JSON-RPC: the stdio server said so
                        log.warning("ignored a malformed message from the client", extra={"error": str(message)})
                        continue
                    pending.sent(message.message)
                    await remote_out.send(message)
                await pending.drained()  # the client closed stdin: answer what it asked, then end
                finish()

            async def downstream() -> None:
                async for message in remote_in:
                    if isinstance(message, Exception):
                        log.warning("error from the running Jarvis", extra={"error": str(message)})
                        continue
                    await local_out.send(message)
                    pending.answered(message.message)  # once written: the relay may end as soon as none is left
                finish()

            tasks.start_soon(upstream)
            tasks.start_soon(downstream)
