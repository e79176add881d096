"""Raw exec and attach streams: the engine's hijacked HTTP connection, demultiplexed into stdout/stderr frames.

docker-py hands out the socket below its buffered HTTP reader, so bytes that arrive with the
101 response can be lost; this module does the upgrade itself and keeps every byte.
"""

from __future__ import annotations

import json
import select
import socket
import struct
import time
from urllib.parse import urlparse

from jarvis.common.errors import Unavailable

STREAMS = {1: "stdout", 2: "stderr"}
PID_MARKER = b"jarvis-pid:"
# Inside the container, each exec's process group leaves a marker file (`true >file`: a failed redirection
# of a regular command, unlike one of `:`, never stops the shell) while it runs (in the private
# /tmp every project container has): a runtime that restarts kills the groups still marked, whose
# caller (and timeout) died with the previous process.
EXEC_MARKER = "/tmp/.jarvis-exec."  # noqa: S108 - the container's own tmpfs
# Runs first inside the container: reports the process group (each exec leads its own), marks it,
# runs the command, then ends what it left running in the background (a fork bomb, a stray daemon),
# so an exec that returned has nothing left behind. The command is passed as positional arguments,
# never spliced into the script.
WRAPPER = (
    "sh",
    "-c",
    "printf 'jarvis-pid:%s\\n' \"$$\" >&2; true 2>/dev/null >" + EXEC_MARKER + '$$; "$@"; rc=$?; '
    "rm -f " + EXEC_MARKER + "$$ 2>/dev/null; trap '' TERM; kill -TERM 0 2>/dev/null; exit $rc",
    "jarvis",
)
# Kills every marked group but the caller's own; prints how many it found.
REAP_MARKED = (
    "n=0; for f in " + EXEC_MARKER + "*; do p=${f##*.}; case $p in ''|*[!0-9]*) continue;; esac; "
    '[ "$p" -gt 1 ] || continue; kill -KILL "-$p" 2>/dev/null; rm -f "$f"; n=$((n+1)); done; '
    "echo $n"
)


def open_exec(host: str, api_base: str, exec_id: str, timeout: float = 10.0) -> tuple[socket.socket, bytes]:
    """Start exec `exec_id` attached; returns the connected socket and bytes already read past the headers."""
    body = json.dumps({"Detach": False, "Tty": False}).encode()
    return open_upgraded(host, f"{api_base}/exec/{exec_id}/start", body, "start the exec", timeout)


def open_attach(host: str, api_base: str, container_id: str, timeout: float = 10.0) -> tuple[socket.socket, bytes]:
    """Attach to a container's stdin, stdout and stderr (before starting it, so no output is missed)."""
    path = f"{api_base}/containers/{container_id}/attach?stream=1&stdin=1&stdout=1&stderr=1"
    return open_upgraded(host, path, b"", "attach to the container", timeout)


def open_upgraded(host: str, path: str, body: bytes, what: str, timeout: float = 10.0) -> tuple[socket.socket, bytes]:
    """POST `path` asking for a raw stream (HTTP upgrade); returns the socket and bytes read past the headers."""
    parsed = urlparse(host)
    try:
        if parsed.scheme == "unix":
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(parsed.path)
        elif parsed.scheme in ("tcp", "http"):
            sock = socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 2375), timeout)
        else:
            raise Unavailable(
                f"raw streams over DOCKER_HOST {host!r} are not supported; use a unix:// or tcp:// engine"
            )
    except OSError as exc:
        raise Unavailable(f"the Docker engine at {host} is unreachable ({exc}); start it or set DOCKER_HOST") from exc
    request = (
        f"POST {path} HTTP/1.1\r\nHost: docker\r\n"
        f"Content-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    try:
        sock.sendall(request)
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                raise Unavailable(f"the Docker engine at {host} closed the stream before answering")
            head += chunk
    except BaseException:
        sock.close()
        raise
    headers, _, rest = head.partition(b"\r\n\r\n")
    status = headers.split(b"\r\n", 1)[0]
    if b" 101 " not in status and b" 200 " not in status:
        sock.close()
        raise Unavailable(f"the Docker engine refused to {what}: {status.decode(errors='replace')}")
    sock.settimeout(None)
    return sock, rest


_WAIT_SLICE = 0.5  # seconds a reader waits on its socket before checking that the socket is still open


class FrameReader:
    """Reads multiplexed frames (8-byte header: stream, 3 zero bytes, big-endian length)."""

    def __init__(self, sock: socket.socket, initial: bytes = b"") -> None:
        self.sock = sock
        self._buffer = bytearray(initial)
        self.eof = False

    def _fill(self, deadline: float | None) -> bool:
        """Read more bytes; False on EOF or when `deadline` passes first.

        The wait is sliced: a stream closed by another thread while this one waits in select() could see its
        descriptor number reused by a new socket (another engine call), and an unbounded select() would then
        wait on that socket forever. Each slice re-checks that the socket is still open.
        """
        if self.eof:
            return False
        chunk = b""
        try:
            while self.sock.fileno() >= 0:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                wait = _WAIT_SLICE if left is None else min(left, _WAIT_SLICE)
                ready, _, _ = select.select([self.sock], [], [], wait)
                if ready:
                    chunk = self.sock.recv(65536)
                    break
        except (OSError, ValueError):  # closed by another thread (ValueError: its descriptor is gone)
            chunk = b""
        if not chunk:
            self.eof = True
            return False
        self._buffer += chunk
        return True

    def frames(self, deadline: float | None = None) -> list[tuple[str, bytes]]:
        """The complete frames available now, waiting (until `deadline`) for at least one; [] at EOF/deadline."""
        while True:
            out: list[tuple[str, bytes]] = []
            while len(self._buffer) >= 8:
                kind, size = struct.unpack(">BxxxL", self._buffer[:8])
                if len(self._buffer) < 8 + size:
                    break
                out.append((STREAMS.get(kind, "stdout"), bytes(self._buffer[8 : 8 + size])))
                del self._buffer[: 8 + size]
            if out:
                return out
            if not self._fill(deadline):
                return []


class LineSplitter:
    """Turns frames into lines per stream; over-long lines are cut at `max_line` bytes."""

    def __init__(self, max_line: int) -> None:
        self.max_line = max_line
        self._partial: dict[str, bytearray] = {"stdout": bytearray(), "stderr": bytearray()}

    def feed(self, stream: str, data: bytes) -> list[tuple[str, bytes]]:
        buffer = self._partial.setdefault(stream, bytearray())
        buffer += data
        lines: list[tuple[str, bytes]] = []
        while True:
            cut = buffer.find(b"\n")
            if cut < 0:
                if len(buffer) >= self.max_line:
                    lines.append((stream, bytes(buffer[: self.max_line])))
                    del buffer[: self.max_line]
                    continue
                return lines
            lines.append((stream, bytes(buffer[:cut]).rstrip(b"\r")))
            del buffer[: cut + 1]

    def flush(self) -> list[tuple[str, bytes]]:
        rest = [(s, bytes(b)) for s, b in self._partial.items() if b]
        for buffer in self._partial.values():
            buffer.clear()
        return rest


def take_pid(reader: FrameReader, splitter: LineSplitter, deadline: float) -> tuple[int, list[tuple[str, bytes]]]:
    """Read until the wrapper's pid line; returns the pid and any other lines read meanwhile."""
    pending: list[tuple[str, bytes]] = []
    while time.monotonic() < deadline:
        frames = reader.frames(deadline)
        if not frames:
            break
        lines = [line for stream, data in frames for line in splitter.feed(stream, data)]
        for index, (stream, line) in enumerate(lines):
            if stream == "stderr" and line.startswith(PID_MARKER):
                # Lines after the marker in the same read already belong to the command.
                return int(line[len(PID_MARKER) :] or b"0"), pending + lines[index + 1 :]
            pending.append((stream, line))
    return 0, pending
