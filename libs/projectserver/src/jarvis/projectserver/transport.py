"""An MCP client transport over the pipes of a process someone else spawned and supervises.

The SDK's `stdio_client` spawns and stops the server itself (close stdin, then its own
timeouts). The lifecycle manager needs the process in hand instead — its pid for the process
group, its stderr for crash reports, SIGTERM-then-SIGKILL on its own schedule — so it spawns
the process and hands the pipes to this transport, which only moves newline-delimited JSON-RPC
messages between them and the SDK's session.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
from anyio.abc import Process
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage

log = logging.getLogger(__name__)


def _parse(line: bytes) -> SessionMessage | Exception:
    """One stdout line as a message; a parse error is passed on for the session to surface."""
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        log.warning("project server wrote a line that is not JSON-RPC: %.200r", line)
        return exc


@asynccontextmanager
async def process_transport(process: Process) -> AsyncIterator[TransportStreams]:
    """Read and write streams for an MCP `Client`, bridged to `process`'s stdout and stdin."""
    assert process.stdin is not None, "spawn the process with pipes"
    assert process.stdout is not None, "spawn the process with pipes"
    stdin, stdout = process.stdin, process.stdout
    inbound_writer, inbound = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outbound, outbound_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def pump_stdout() -> None:
        buffer = b""
        async with inbound_writer:
            try:
                async for chunk in stdout:
                    *lines, buffer = (buffer + chunk).split(b"\n")
                    for line in lines:
                        if line.strip():
                            await inbound_writer.send(_parse(line))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
                pass  # the process is gone or the session closed; the session sees the stream end

    async def pump_stdin() -> None:
        async with outbound_reader:
            try:
                async for message in outbound_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await stdin.send(data.encode())
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                await inbound_writer.aclose()  # a request must not wait forever on a dead pipe

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump_stdout)
        tg.start_soon(pump_stdin)
        try:
            yield inbound, outbound
        finally:
            tg.cancel_scope.cancel()
            for stream in (inbound, outbound):
                await stream.aclose()
