"""A stdio MCP server as a child process Jarvis owns: argv (never a shell), own process group, and
killed with Jarvis even when Jarvis itself is killed (`PR_SET_PDEATHSIG` on Linux).

The framing of a server's stdout (bounded lines, oversized and non-JSON-RPC lines) and the tail of
its stderr are kept here for every stdio-speaking server, child process or container."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import re
import shutil
import signal
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Protocol, Self

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from jarvis.aggregator.children import dies_with_jarvis
from jarvis.aggregator.downstream.transport import commands

log = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 2.0  # after stdin closes (the MCP shutdown sequence), then SIGTERM, then SIGKILL
_READ_CHUNK = 64 * 1024
OVERSIZED = "oversized"  # marks the error Jarvis answers in place of a response it dropped
_STDERR_LINES = 20
_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,18})')


@dataclass(frozen=True)
class StdioSpec:
    server: str
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    max_message_bytes: int = 8 * 1024 * 1024


@dataclass
class ChildProcess:
    """What the supervisor reports about a running server: pid or container, exit, stderr tail, protocol noise."""

    pid: int | None
    container: str = ""  # the container's id, for a server the runtime service runs
    started_at: float = field(default_factory=time.time)
    returncode: int | None = None
    exit_detail: str = ""  # why it ended, when the exit code alone does not say (or is unknown)
    exited: asyncio.Event = field(default_factory=asyncio.Event)
    stderr_tail: deque[str] = field(default_factory=lambda: deque(maxlen=_STDERR_LINES))
    garbage_lines: int = 0
    last_garbage: str = ""
    oversized: int = 0

    def describe_exit(self) -> str:
        code = self.returncode
        if code is None:
            how = self.exit_detail or "is still running"
        else:
            how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
            how += f" ({self.exit_detail})" if self.exit_detail else ""
        subject = f"container {self.container[:12]}" if self.container else f"process {self.pid}"
        return f"{subject} {how}{self.context()}"

    def context(self) -> str:
        """The clues a person needs: stderr's last lines and any non-protocol output on stdout."""
        parts = []
        if self.last_garbage:
            parts.append(f"printed {self.garbage_lines} non-JSON-RPC line(s) on stdout, last: {self.last_garbage!r}")
        if self.stderr_tail:
            parts.append("stderr: " + " | ".join(list(self.stderr_tail)[-3:]))
        return "; " + "; ".join(parts) if parts else ""


def argv_of(spec: StdioSpec) -> list[str]:
    """The command line to spawn: the server's own argv, behind the die-with-Jarvis step on Linux."""
    return dies_with_jarvis([spec.command, *spec.args])


class Claims(Protocol):
    """Lines of a server's output taken before its SDK session sees them (pipe_calls.py)."""

    def attach(self, lines: StdinStream) -> None: ...

    def claim(self, line: bytes | bytearray) -> bool: ...

    def refuse(self, request_id: str | int, error: types.ErrorData) -> bool: ...

    def end(self) -> None: ...


class StdinStream:
    """A server's stdin as its SDK session's write stream: each message is written as a line when it is sent, not by a
    task of its own, so the session's messages and Jarvis's own lines (pipe_calls.py) reach the server in the order
    sent (a request never overtakes the handshake's `notifications/initialized`). Subclasses write the lines."""

    async def send(self, message: SessionMessage, /) -> None:
        await self.line(encode(message))

    async def line(self, data: bytes) -> None:
        raise NotImplementedError

    def line_nowait(self, data: bytes) -> None:
        """Written without waiting (a cancellation notice: its request's caller has moved on)."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Nothing: stdin ends when the transport stops the server, in MCP's shutdown order."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class StdinWriter(StdinStream):
    """A child process's stdin pipe."""

    def __init__(self, stdin: asyncio.StreamWriter) -> None:
        self._stdin = stdin

    async def line(self, data: bytes) -> None:
        if self._stdin.is_closing():
            raise anyio.ClosedResourceError
        try:
            self._stdin.write(data)
            await self._stdin.drain()
        except (ConnectionError, OSError) as exc:
            raise anyio.BrokenResourceError from exc  # the process is gone; the exit watcher reports it

    def line_nowait(self, data: bytes) -> None:
        if not self._stdin.is_closing():
            self._stdin.write(data)  # buffered by the pipe's transport: no wait


@contextlib.asynccontextmanager
async def stdio_transport(
    spec: StdioSpec, claims: Claims | None = None
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[SessionMessage | Exception], StdinWriter, ChildProcess]]:
    """Spawn the server and bridge its pipes to the SDK's message streams; stop it on exit. `claims` takes the lines
    meant for Jarvis's own requests, and writes those on the same stdin."""
    env_path = (get_default_environment() | spec.env).get("PATH", os.defpath)
    command, args = commands.resolve(spec.command, spec.args, env_path)
    spec = dataclasses.replace(spec, command=command, args=args)
    try:
        _check_command(spec)
        proc = await asyncio.create_subprocess_exec(
            *argv_of(spec),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=get_default_environment() | spec.env,
            cwd=spec.cwd or None,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise OSError(f"cannot start '{spec.command}': {exc.strerror or exc}") from exc
    child = ChildProcess(pid=proc.pid)
    to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](64)
    assert proc.stdin is not None
    assert proc.stdout is not None
    assert proc.stderr is not None
    stdin = StdinWriter(proc.stdin)
    if claims is not None:
        claims.attach(stdin)
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            read_messages, _chunks(proc.stdout), to_session, child, spec.server, spec.max_message_bytes, claims
        )
        tg.start_soon(read_stderr, proc.stderr, child, spec.server)
        tg.start_soon(_watch_exit, proc, child)
        try:
            yield read_stream, stdin, child
        finally:
            with anyio.CancelScope(shield=True):
                await stop_process(proc, child)
                for stream in (read_stream, to_session):
                    await stream.aclose()
            tg.cancel_scope.cancel()


def _check_command(spec: StdioSpec) -> None:
    """Fail with a plain reason before spawning (the exec step would only exit with a code)."""
    env_path = (get_default_environment() | spec.env).get("PATH", os.defpath)
    if shutil.which(spec.command, path=env_path) is None and not (
        os.sep in spec.command and os.access(Path(spec.cwd or ".", spec.command), os.X_OK)
    ):
        raise FileNotFoundError(
            2,
            f"command '{spec.command}' not found on PATH ({env_path[:200]}) or not "
            f"executable; fix: {commands.fix_for(spec.command)}",
        )
    if spec.cwd and not Path(spec.cwd).is_dir():
        raise FileNotFoundError(2, f"working directory '{spec.cwd}' does not exist")


async def stop_process(proc: asyncio.subprocess.Process, child: ChildProcess) -> None:
    """MCP's shutdown order: close stdin, wait; SIGTERM the group, wait; SIGKILL the group."""
    if proc.stdin is not None and not proc.stdin.is_closing():
        proc.stdin.close()
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)  # the group: a server's own children go too
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(child.exited.wait(), STOP_GRACE_SECONDS)
        if child.exited.is_set():
            break
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # leftovers of the group (a grandchild holding pipes)


async def _watch_exit(proc: asyncio.subprocess.Process, child: ChildProcess) -> None:
    # Not proc.wait(): since 3.11 it also waits for pipe EOF, which a grandchild can hold open.
    while proc.returncode is None:  # noqa: ASYNC110 - the child watcher sets returncode; nothing to wait on
        await asyncio.sleep(0.2)
    child.returncode = proc.returncode
    child.exited.set()


async def _chunks(stream: asyncio.StreamReader) -> AsyncIterator[bytes]:
    while chunk := await stream.read(_READ_CHUNK):
        yield chunk


async def read_messages(
    chunks: AsyncIterator[bytes],
    send: MemoryObjectSendStream[SessionMessage | Exception],
    child: ChildProcess,
    server: str,
    max_message_bytes: int,
    claims: Claims | None = None,
) -> None:
    """Split a server's stdout into JSON-RPC messages, bounded: an oversized one is dropped, never buffered whole.

    `send` closes when the output ends, which the session sees as the connection closing; `claims` hears it too.
    """
    buffer = bytearray()
    discarding = False
    head = b""
    async with send:
        try:
            async for chunk in chunks:
                start = 0
                while (newline := chunk.find(b"\n", start)) >= 0 or start < len(chunk):
                    end = newline if newline >= 0 else len(chunk)
                    piece = chunk[start:end]
                    start = end + 1 if newline >= 0 else len(chunk)
                    if not discarding and len(buffer) + len(piece) > max_message_bytes:
                        discarding, head = True, bytes(buffer[:512] + piece[:512])[:512]
                        buffer.clear()
                    if not discarding:
                        buffer += piece
                    if newline < 0:
                        break
                    if discarding:
                        await _oversized(send, child, server, max_message_bytes, head, claims)
                        discarding = False
                    elif claims is None or not claims.claim(buffer):
                        await _deliver(send, child, server, bytes(buffer))
                    buffer.clear()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return  # the session went away; the server is being stopped
        finally:
            if claims is not None:
                claims.end()


async def _deliver(
    send: MemoryObjectSendStream[SessionMessage | Exception], child: ChildProcess, server: str, line: bytes
) -> None:
    if not line.strip():
        return
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError:
        # Servers that print banners or logs on stdout break the protocol; skip the line, but say so.
        child.garbage_lines += 1
        child.last_garbage = line[:200].decode(errors="replace")
        if child.garbage_lines <= 3 or child.garbage_lines % 100 == 0:
            log.warning(
                "downstream server %s printed a non-JSON-RPC line on stdout: %r",
                server,
                child.last_garbage,
                extra={"server": server, "line": child.last_garbage, "count": child.garbage_lines},
            )
        return
    await send.send(SessionMessage(message))


async def _oversized(
    send: MemoryObjectSendStream[SessionMessage | Exception],
    child: ChildProcess,
    server: str,
    limit: int,
    head: bytes,
    claims: Claims | None,
) -> None:
    """Answer the request an oversized response was for with an error, so its caller does not wait in vain."""
    child.oversized += 1
    error = oversized_error(server, limit)
    found = _ID.search(head)
    if found is None or b'"method"' in head[: found.start()]:
        return  # a notification or a request of the server's own: nobody is waiting for it
    raw = found.group(1)
    request_id: str | int = raw[1:-1].decode(errors="replace") if raw.startswith(b'"') else int(raw)
    if claims is not None and claims.refuse(request_id, error):
        return
    await send.send(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)))


def oversized_error(server: str, limit: int) -> types.ErrorData:
    """Logged once, and answered in place of a message over `limit` bytes that Jarvis dropped unread."""
    size = f"{limit / 2**20:g} MiB" if limit >= 2**20 else f"{limit:,} bytes"
    log.warning(
        "downstream server %s sent a message over %d bytes; dropped",
        server,
        limit,
        extra={"server": server, "limit_bytes": limit},
    )
    return types.ErrorData(
        code=types.INTERNAL_ERROR,
        data={"jarvis": OVERSIZED},
        message=f"the response of server '{server}' was larger than {size} and was dropped",
    )


def encode(message: SessionMessage) -> bytes:
    """One message as a server reads it on stdin: compact JSON and a newline."""
    return message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"


async def read_stderr(stderr: asyncio.StreamReader, child: ChildProcess, server: str) -> None:
    """Keep the last lines for error messages; reading also keeps a chatty server from blocking on a full pipe."""
    while True:
        try:
            line = await stderr.readline()
        except ValueError:  # a line over the reader's limit: keep going with the rest
            continue
        if not line:
            return
        text = line.decode(errors="replace").rstrip()[:300]
        if text:
            child.stderr_tail.append(text)
            log.debug("downstream stderr", extra={"server": server, "line": text})
