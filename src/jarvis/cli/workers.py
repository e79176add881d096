"""Several aggregator processes on one port: each binds it with SO_REUSEPORT, the main one respawns the others.

The kernel spreads new connections over the listening sockets by a hash of the connection's addresses,
so no process sits in front of the workers (no extra hop, no single accept loop), and a worker that dies
takes only its own connections with it: new ones go to the sockets still listening. Every worker is a
full aggregator (its own event loop, registry client and downstream host); what one MCP request needs
from another is in the registry or Redis, which is why more than one worker means stateless HTTP.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any

from jarvis.aggregator.settings import AggregatorSettings
from jarvis.common.errors import FailedPrecondition

log = logging.getLogger(__name__)

BACKOFF_FIRST = 0.5  # seconds before a dead worker is started again; doubles per quick death
BACKOFF_MAX = 30.0
STABLE_SECONDS = 30.0  # a worker that ran this long died of something new: the backoff starts over
STOP_GRACE = 10.0  # in-flight calls get this long after SIGTERM before a worker is killed
_PR_SET_PDEATHSIG = 1


def worker_count(requested: int) -> int:
    """0 means one worker per core."""
    return requested if requested > 0 else max(1, os.cpu_count() or 1)


def multi_worker_settings(settings: AggregatorSettings, workers: int) -> AggregatorSettings:
    """The settings every worker runs with: stateless HTTP, so any worker can answer any request.

    A 2025-era session's one piece of state Jarvis keeps between requests is discovery's loaded tools,
    which must then live where every worker reads it: Redis.
    """
    if not settings.redis_url:
        raise FailedPrecondition(
            f"{workers} workers answer each request in whichever process takes it, so a session's loaded tools "
            "(tool_load) must live in Redis: set JARVIS_REDIS_URL, or run one worker"
        )
    return settings.model_copy(update={"stateless": True, "workers": workers})


def reuse_port_socket(host: str, port: int) -> socket.socket:
    """A listening socket on host:port that other workers' sockets may share (SO_REUSEPORT).

    Linux lets only processes of the same effective user join a port this way, so another local user
    cannot slip a listener of their own in among the workers.
    """
    bind = "0.0.0.0" if host == "" else host  # noqa: S104 - the operator's bind address, as uvicorn takes it
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    # IPPROTO_TCP named outright: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and an
    # accepted connection inherits it; with proto 0, Nagle and delayed ACKs add ~40 ms to small answers.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((bind, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    return sock


def die_with_parent(parent: int) -> None:
    """Have the kernel stop this worker when the process that started it dies, however it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # it died before the death signal was armed
        sys.exit(0)


class WorkerPool:
    """Runs `count` extra worker processes and starts each again when it dies, until stopped.

    A worker gets its settings on stdin (they may hold the internal plane's token, which must not be
    seen in a process listing) and runs in a process group of its own, so a Ctrl-C meant for the main process
    reaches the workers only through `stop`, and is never mistaken for a crash to recover from. It stays in the
    main process's session: Linux's autogroup scheduler (on by default) shares the CPU fairly between sessions,
    not processes, and a worker in a session of its own was starved beside a busy one (event-loop stalls of
    20-130 ms several times a second; docs/decisions/0044-aggregator-workers.md).
    """

    def __init__(self, settings: AggregatorSettings, mode: str, count: int) -> None:
        self.payload = json.dumps(
            {
                "settings": settings.model_copy(update={"workers": 1}).model_dump(mode="json"),
                "mode": mode,
                "parent": os.getpid(),
            }
        ).encode()
        self.count = count
        self.metrics_dir = settings.metrics_dir
        self.processes: dict[int, subprocess.Popen[bytes]] = {}
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for slot in range(1, self.count + 1):
            thread = threading.Thread(target=self._keep, args=(slot,), name=f"jarvis-worker-{slot}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def pids(self) -> list[int]:
        with self._lock:
            return [p.pid for p in self.processes.values()]

    def _spawn(self, slot: int) -> subprocess.Popen[bytes] | None:
        with self._lock:
            if self._stopping.is_set():
                return None
            process = subprocess.Popen(  # noqa: S603 - this interpreter, a fixed module, no shell
                [sys.executable, "-m", "jarvis.cli.worker", str(slot)],
                stdin=subprocess.PIPE,
                process_group=0,
            )
            self.processes[slot] = process
        assert process.stdin is not None
        process.stdin.write(self.payload)
        process.stdin.close()
        return process

    def _keep(self, slot: int) -> None:
        backoff = BACKOFF_FIRST
        while (process := self._spawn(slot)) is not None:
            started = time.monotonic()
            code = process.wait()
            if self._stopping.is_set():
                return
            backoff = BACKOFF_FIRST if time.monotonic() - started > STABLE_SECONDS else backoff
            log.warning(
                "aggregator worker %d (pid %d) exited with %s; starting it again in %.1fs",
                slot,
                process.pid,
                code,
                backoff,
            )
            if self._stopping.wait(backoff):
                return
            backoff = min(backoff * 2, BACKOFF_MAX)

    def stop(self, grace: float = STOP_GRACE) -> None:
        """SIGTERM every worker (uvicorn lets in-flight calls finish), then SIGKILL what is left after `grace`."""
        with self._lock:
            self._stopping.set()
            processes = list(self.processes.values())
        for process in processes:
            if process.poll() is None:
                process.terminate()
        deadline = time.monotonic() + grace
        for process in processes:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for thread in self._threads:
            thread.join(1.0)
        shutil.rmtree(self.metrics_dir, ignore_errors=True)


def read_payload() -> dict[str, Any]:
    """What the main process wrote on a worker's stdin."""
    return dict(json.loads(sys.stdin.buffer.read()))
