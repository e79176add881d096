"""Processes inside a container: a bounded one-shot command, a long-lived agent with open stdin, and the
attached stdio of an MCP server container."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from jarvis.runtime.adapters.exec_stream import PID_MARKER, FrameReader, LineSplitter


@dataclass(frozen=True)
class Output:
    stdout: str
    stderr: str
    timed_out: bool
    truncated: bool
    pid: int  # the command's process group, to kill when it timed out or was truncated


def collect_output(reader: FrameReader, deadline: float, max_output: int) -> Output:
    """Read a command's output until it ends, `deadline` passes or it wrote `max_output` bytes.

    The wrapper's pid line (the first stderr line) is taken out of stderr and returned as `pid`.
    """
    out, err, marker = bytearray(), bytearray(), _Marker()
    timed_out = truncated = False
    while True:
        frames = reader.frames(deadline)
        if not frames:
            timed_out = not reader.eof  # the deadline passed with the command still running
            break
        for stream, data in frames:
            data = marker.take(data) if stream == "stderr" else data
            (err if stream == "stderr" else out).extend(data)
        if len(out) + len(err) > max_output:
            truncated = True
            break
    if timed_out or truncated:
        # stdout and stderr are separate pipes: the pid line may still be on its way.
        until = time.monotonic() + 2
        while not marker.pid and time.monotonic() < until:
            for stream, data in reader.frames(until):
                if stream == "stderr":
                    marker.take(data)
            if reader.eof:
                break
    return Output(
        stdout=_cap(out, max_output),
        stderr=_cap(err, max(0, max_output - min(len(out), max_output))),
        timed_out=timed_out,
        truncated=truncated,
        pid=marker.pid,
    )


class _Marker:
    """Finds the wrapper's `jarvis-pid:N` line at the start of stderr and strips it."""

    def __init__(self) -> None:
        self.pid = 0
        self._head = bytearray()
        self._done = False

    def take(self, data: bytes) -> bytes:
        if self._done:
            return data
        self._head += data
        line, newline, rest = bytes(self._head).partition(b"\n")
        if not newline:
            return b""
        self._done = True
        if line.startswith(PID_MARKER):
            self.pid = int(line[len(PID_MARKER) :] or b"0")
            return rest
        return bytes(self._head)


def _cap(data: bytearray, limit: int) -> str:
    return bytes(data[:limit]).decode("utf-8", errors="replace")


class SocketStream:
    """A hijacked engine stream: write to the process's stdin, read its multiplexed output."""

    def __init__(self, sock: socket.socket, reader: FrameReader) -> None:
        self._sock = sock
        self._reader = reader
        self._write_lock = threading.Lock()
        self._stdin_open = True

    def write(self, data: bytes) -> None:
        with self._write_lock:
            if not self._stdin_open:
                raise BrokenPipeError("the process's input is closed")
            self._sock.sendall(data)

    def close_stdin(self) -> None:
        with self._write_lock:
            if self._stdin_open:
                self._stdin_open = False
                with contextlib.suppress(OSError):
                    self._sock.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self._stdin_open = False
        # shutdown first: it wakes a thread blocked reading this socket (it then sees the end of the stream).
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._sock.close()


class DockerAttachedStream(SocketStream):
    """An MCP server container's stdio, attached before it started."""

    def chunks(self) -> Iterator[list[tuple[str, bytes]]]:
        while frames := self._reader.frames():
            yield frames


class DockerAgentProcess(SocketStream):
    """An agent session's process: write to its stdin, read its output line by line."""

    def __init__(
        self,
        sock: socket.socket,
        reader: FrameReader,
        splitter: LineSplitter,
        pid: int,
        early: list[tuple[str, bytes]],
        exit_code: Callable[[], int | None],
    ) -> None:
        super().__init__(sock, reader)
        self.pid = pid
        self._splitter = splitter
        self._early = early
        self._exit_code = exit_code

    def batches(self) -> Iterator[list[tuple[str, bytes]]]:
        """Lines as they arrive, grouped by read, until the process ends."""
        if self._early:
            yield self._early
            self._early = []
        while True:
            frames = self._reader.frames()
            if not frames:
                rest = self._splitter.flush()
                if rest:
                    yield rest
                return
            lines = [line for stream, data in frames for line in self._splitter.feed(stream, data)]
            if lines:
                yield lines

    def exit_code(self) -> int | None:
        return self._exit_code()
