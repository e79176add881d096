"""One Jarvis per data dir: a lock file naming the process that serves it, and where.

`<data dir>/jarvis.lock` is held with flock(2) by the process running the data dir's runtime (`jarvis up`,
or a `jarvis mcp` that found nobody serving it); the kernel releases it when that process dies, however
it dies. The file says who holds it (pid, command) and, for `jarvis up`, the URL it serves, so a
`jarvis mcp` can bridge to it instead of starting a second runtime that would take over the first's
containers and sessions. It also names the loopback addresses of that `jarvis up`'s services, so an admin command
(`jarvis token list`…) asks its registry instead of opening the data dir's database a second time, and `jarvis
status` asks the same services `jarvis_check_status` does.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

LOCK_FILE = "jarvis.lock"


@dataclass(frozen=True)
class Holder:
    pid: int
    command: str
    url: str = ""  # the HTTP base URL it serves; "" while starting, or for a stdio-only `jarvis mcp`
    # host:port of each of its services by name (registry, runtime, scheduler, debug) once they serve; called with
    # the internal plane's credential (the data dir's internal token)
    services: dict[str, str] = field(default_factory=dict)

    @property
    def registry(self) -> str:
        return self.services.get("registry", "")

    def describe(self) -> str:
        return f"`{self.command}` (pid {self.pid}{', serving ' + self.url if self.url else ''})"


class DataDirLock:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / LOCK_FILE
        self._fd: int | None = None

    def acquire(self, command: str) -> Holder | None:
        """Hold the lock and return None; or, when another process holds it, return who that is."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return self.holder(held=True) or Holder(pid=0, command="another Jarvis process")
        self._fd = fd
        self._write(Holder(os.getpid(), command))
        return None

    def publish(self, url: str, services: dict[str, str] | None = None) -> None:
        """Say where this process serves (once it listens), and where its services do (kept when not given)."""
        assert self._fd is not None, "publish after acquire"
        current = self.holder()
        kept = current.services if current is not None else {}
        self._write(
            Holder(os.getpid(), current.command if current else "jarvis", url, kept if services is None else services)
        )

    def _write(self, holder: Holder) -> None:
        assert self._fd is not None
        data = json.dumps(asdict(holder)).encode()
        # The whole record in one write, then the end cut: a reader sees it whole, or a longer record's tail after
        # it (not JSON: it retries), never an empty file, which means nobody holds the lock.
        os.pwrite(self._fd, data, 0)
        os.ftruncate(self._fd, len(data))

    def holder(self, wait: float = 2.0, held: bool = False) -> Holder | None:
        """Who the file says holds the lock (waiting out a write in progress), or None when unreadable.

        Unless the lock is known to be `held` (an empty file then means its holder has not written yet), None at once
        when there is no file or an empty one: nobody has held the lock, or its holder let it go."""
        deadline = time.monotonic() + wait
        while True:
            try:
                text = self.path.read_text()
                if not text and not held:
                    return None
                value = json.loads(text or "null")
                if isinstance(value, dict):
                    return Holder(
                        pid=int(value.get("pid", 0)),
                        command=str(value.get("command", "")),
                        url=str(value.get("url", "")),
                        services={str(k): str(v) for k, v in dict(value.get("services") or {}).items()},
                    )
            except FileNotFoundError:
                if not held:
                    return None
            except (OSError, ValueError):
                pass
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)
            self._fd = None
