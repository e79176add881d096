"""A container-image MCP server, run by the runtime service with its stdio attached to one gRPC stream.

The runtime creates a hardened container from the image (no network unless its operator names
one), streams its stdout and stderr here, and removes it when the stream ends: the server never
outlives this connection, even when the aggregator is killed (the call then breaks). Framing,
noise and size limits of stdout, and the stderr tail, are stdio.py's, shared.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from jarvis.aggregator.downstream.transport.stdio import (
    STOP_GRACE_SECONDS,
    ChildProcess,
    Claims,
    StdinStream,
    read_messages,
    read_stderr,
)
from jarvis.aggregator.gateways.runtime import RuntimeGateway
from jarvis.aggregator.gateways.server_pipe import Exited, PipeBroken, ServerPipe, Stderr, Stdout

_STDERR_LIMIT = 64 * 1024  # a longer stderr "line" is skipped, as from a child process's pipe


@dataclass(frozen=True)
class ContainerSpec:
    server: str
    image: str
    runtime: RuntimeGateway = field(compare=False, repr=False)
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict, repr=False)  # values may be secrets
    max_message_bytes: int = 8 * 1024 * 1024


class ContainerStdin(StdinStream):
    """A container's stdin on the runtime's stream. The stream takes one write at a time, so writes queue on a lock,
    in the order sent, whichever path sent them."""

    def __init__(self, pipe: ServerPipe) -> None:
        self._pipe = pipe
        self._turn = asyncio.Lock()
        self._ended = False
        self._background: set[asyncio.Task[None]] = set()  # cancellation notices being written

    async def line(self, data: bytes) -> None:
        async with self._turn:
            if self._ended:
                raise anyio.ClosedResourceError
            try:
                await self._pipe.write_stdin(data)
            except PipeBroken as exc:
                raise anyio.BrokenResourceError from exc  # the call ended; _read_output reports how

    def line_nowait(self, data: bytes) -> None:
        task = asyncio.ensure_future(self._quietly(data))  # written after what is queued before it
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def end(self) -> None:
        """The server reads end-of-file: MCP's signal to exit."""
        async with self._turn:
            if self._ended:
                return
            self._ended = True
            await self._pipe.end_stdin()

    async def _quietly(self, data: bytes) -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self.line(data)


@contextlib.asynccontextmanager
async def container_transport(
    spec: ContainerSpec, claims: Claims | None = None
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[SessionMessage | Exception], ContainerStdin, ChildProcess]]:
    """Start the server's container through the runtime and bridge its stdio to the SDK's message streams. `claims`
    takes the lines meant for Jarvis's own requests, and writes those on the same stdin."""
    pipe = spec.runtime.attach_server()
    container_id = await pipe.start(spec.server, spec.image, spec.args, spec.env)
    child = ChildProcess(pid=None, container=container_id)
    to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](64)
    stdin = ContainerStdin(pipe)
    if claims is not None:
        claims.attach(stdin)
    # Bounded: a server writing faster than the session reads is held back through the stream's flow control.
    stdout_send, stdout_receive = anyio.create_memory_object_stream[bytes](16)
    stderr = asyncio.StreamReader(limit=_STDERR_LIMIT)
    async with anyio.create_task_group() as tg:
        tg.start_soon(read_messages, stdout_receive, to_session, child, spec.server, spec.max_message_bytes, claims)
        tg.start_soon(read_stderr, stderr, child, spec.server)
        tg.start_soon(_read_output, pipe, stdout_send, stderr, child)
        try:
            yield read_stream, stdin, child
        finally:
            with anyio.CancelScope(shield=True):
                # MCP's shutdown order: close its stdin (the end of our side of the stream) and wait; then end the
                # call, which makes the runtime kill and remove the container.
                with anyio.move_on_after(STOP_GRACE_SECONDS):  # a write the container does not read holds stdin
                    await stdin.end()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(child.exited.wait(), STOP_GRACE_SECONDS)
            # The tasks first: a read of a cancelled call would raise a CancelledError of its own.
            tg.cancel_scope.cancel()
            pipe.cancel()
            for stream in (read_stream, to_session, stdout_receive):
                stream.close()


async def _read_output(
    pipe: ServerPipe, stdout: MemoryObjectSendStream[bytes], stderr: asyncio.StreamReader, child: ChildProcess
) -> None:
    """Route the container's output; its exit (or a broken stream) is the server's exit."""
    async with stdout:
        try:
            while (output := await pipe.read()) is not None:
                if isinstance(output, Stdout):
                    await stdout.send(output.data)
                elif isinstance(output, Stderr):
                    stderr.feed_data(output.data)
                else:
                    _exited(child, output)
        except PipeBroken as exc:
            if not exc.cancelled and not child.exited.is_set():
                child.exit_detail = exc.detail
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the session went away; the transport is closing
        finally:
            stderr.feed_eof()
            if not child.exited.is_set():
                child.exit_detail = child.exit_detail or "ended without reporting an exit code"
                child.exited.set()


def _exited(child: ChildProcess, exited: Exited) -> None:
    child.returncode = exited.exit_code
    child.exit_detail = exited.detail or ("" if child.returncode is not None else "ended; its exit code is unknown")
    child.exited.set()
