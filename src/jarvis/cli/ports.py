"""Whether the port `jarvis up` would serve on is free, and who holds it when it is not (Linux's /proc tells)."""

from __future__ import annotations

import contextlib
import errno
import os
import socket
from pathlib import Path

_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's `st` column


def taken(host: str, port: int) -> str | None:
    """Why `host:port` cannot be served on (one line naming the port, and its holder when that is known), or None."""
    if port == 0:
        return None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # As uvicorn binds: a socket in TIME_WAIT does not count as taken, a listener does.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host or "0.0.0.0", port))  # noqa: S104 - the address Jarvis was asked to serve on
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                return f"cannot listen on {host}:{port}: {exc.strerror}"
            holder = holder_of(port)
            who = f" by {holder}" if holder else ""
            return f"port {port} is already in use{who}: stop it, or start Jarvis with another --port"
    return None


def holder_of(port: int) -> str | None:
    """'pid N (command)' of the process listening on `port`, when /proc can tell (ours, or any as root)."""
    inodes = _listening_inodes(port)
    if not inodes:
        return None
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (proc / "fd").iterdir():
                with contextlib.suppress(OSError):
                    link = os.readlink(fd)
                    if link.startswith("socket:[") and link[8:-1] in inodes:
                        return f"pid {proc.name} ({_command(proc)})"
    return None


def _listening_inodes(port: int) -> set[str]:
    wanted = f"{port:04X}"
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if len(fields) > 9 and fields[1].rsplit(":", 1)[-1] == wanted and fields[3] == _LISTEN:
                    inodes.add(fields[9])
    return inodes


def _command(proc: Path) -> str:
    with contextlib.suppress(OSError):
        words = (proc / "cmdline").read_bytes().split(b"\0")
        return " ".join(" ".join(w.decode(errors="replace").split()) for w in words if w)[:120] or "?"
    return "?"
