"""Deno processes for code mode: started ahead of need with every permission denied, one program each.

A process serves a single run and is then killed, so nothing one program leaves behind (globals, timers, a heap
near its bound) reaches the next caller's. Warmth comes from starting the next processes before they are needed.

Jarvis and the bootstrap speak over two pipes of their own (passed as extra descriptors), never the process's
stdout: stdout is the program's console, read and capped here. Memory is bounded for the whole process, not only
V8's heap: RLIMIT_DATA refuses allocations past the bound, and a watchdog reading VmRSS ends the run past it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from jarvis.aggregator.codemode.limits import RunLimits

log = logging.getLogger(__name__)
STDERR_KEPT = 4096  # bytes of a process's stderr kept to explain a crash
LINE_LIMIT = 8 * 1024 * 1024  # the longest line Jarvis reads from a program (its final answer included)
MIB = 1024 * 1024
WATCH_EVERY = 0.05  # seconds between two readings of a running sandbox's memory


def deno_binary() -> str:
    import deno  # type: ignore[import-untyped]  # the PyPI package that ships the binary

    return str(deno.find_deno_bin())


def deno_command(binary: str, bootstrap: Path, limits: RunLimits, channel: tuple[int, int] | None = None) -> list[str]:
    """No --allow-* flag but the two pipes of `channel` (the descriptors the bootstrap reads requests from and
    writes answers to, revoked by it once open): file system, network, environment, subprocesses, FFI and imports
    are all denied, and --no-prompt makes each denial an error instead of a question on a terminal nobody watches."""
    v8 = f"--max-old-space-size={limits.heap_mb},--disallow-code-generation-from-strings,--stack-size=984"
    paths = [f"/dev/fd/{fd}" for fd in channel] if channel else []
    allow = [f"--allow-read={paths[0]}", f"--allow-write={paths[1]}"] if paths else []
    return [
        binary,
        "run",
        "--no-prompt",
        "--no-remote",
        "--no-npm",
        "--no-config",
        "--no-lock",
        "--no-check",
        *allow,
        f"--v8-flags={v8}",
        str(bootstrap),
        str(limits.output_bytes),
        *paths,
    ]


def _status_kib(pid: int, field: str) -> int:
    """A /proc/<pid>/status field in KiB (VmRSS, VmData); 0 once the process is gone."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(field.encode() + b":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _descendants(pid: int) -> list[int]:
    """`pid`'s children, theirs, and so on (Deno has no permission to start any; counted if it ever does)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children", "rb") as children:
                    kids = [int(k) for k in children.read().split()]
            except (OSError, ValueError):
                continue
            found += kids
            todo += kids
    return found


def resident_mib(pid: int) -> float:
    """The memory a process and its descendants hold (VmRSS added up), in MiB."""
    return sum(_status_kib(p, "VmRSS") for p in [pid, *_descendants(pid)]) / 1024


class Sandbox:
    """One started Deno process, ready for one program: its protocol pipes, its console and its memory."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        answers: asyncio.StreamReader,
        requests: asyncio.StreamWriter,
        limits: RunLimits,
    ) -> None:
        self.process = process
        self.answers = answers
        self.requests = requests
        self.limits = limits
        self.stderr = b""
        self.console = b""  # the first limits.output_bytes bytes of the program's stdout
        self.console_dropped = 0  # bytes of stdout past them, read and dropped
        self.over_memory = False  # the watchdog ended it
        self._console_read = 0
        self._console_grew = asyncio.Event()
        self._drain = asyncio.create_task(self._read_stderr())
        self._console = asyncio.create_task(self._read_console())
        self._closers: list[Callable[[], object]] = []

    def on_close(self, closer: Callable[[], object]) -> None:
        self._closers.append(closer)

    async def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        while chunk := await self.process.stderr.read(65536):
            self.stderr = (self.stderr + chunk)[-STDERR_KEPT:]

    async def _read_console(self) -> None:
        """stdout to its end, whatever writes it: kept up to the bound, the rest counted."""
        assert self.process.stdout is not None
        while chunk := await self.process.stdout.read(65536):
            room = max(0, self.limits.output_bytes - len(self.console))
            self.console += chunk[:room]
            self.console_dropped += max(0, len(chunk) - room)
            self._console_read += len(chunk)
            self._console_grew.set()
        self._console_grew.set()

    async def console_text(self, written: int) -> tuple[str, int]:
        """The console once the `written` bytes the bootstrap says it wrote to stdout (before its answer) are read,
        or stdout has ended; and the bytes dropped past the bound."""

        async def arrived() -> None:
            while self._console_read < written and not self._console.done():
                self._console_grew.clear()
                await self._console_grew.wait()

        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(arrived(), 2.0)
        return self.console.decode(errors="ignore"), self.console_dropped

    async def ready(self) -> None:
        line = await self.readline()
        if line is None:
            await self.wait_stderr()
            raise RuntimeError(f"the sandbox did not start: {self.stderr.decode(errors='replace')[-500:]}")
        self._bound_data()

    def _bound_data(self) -> None:
        """RLIMIT_DATA at what Deno has mapped once started plus the run's memory: an allocation past it fails
        (a typed array's with a RangeError), however fast it comes. What Deno has mapped at rest is mostly reserved
        address space, so the bound is counted from there; the watchdog bounds what is actually held."""
        base = _status_kib(self.process.pid, "VmData") * 1024
        if not base:
            return
        bound = base + self.limits.memory_mb * MIB
        try:
            resource.prlimit(self.process.pid, resource.RLIMIT_DATA, (bound, bound))
        except (OSError, ValueError):
            log.warning("code mode: could not bound the sandbox's data segment; the watchdog alone bounds it")

    async def watch_memory(self) -> None:
        """Ends the process once it and its descendants hold more than the run's memory; runs until cancelled."""
        pid = self.process.pid
        while self.process.returncode is None:
            if resident_mib(pid) > self.limits.memory_mb:
                self.over_memory = True
                self.kill()
                return
            await asyncio.sleep(WATCH_EVERY)

    async def readline(self) -> bytes | None:
        try:
            line = await self.answers.readline()
        except (ValueError, asyncio.LimitOverrunError):
            return None
        return line or None

    async def write(self, data: bytes) -> None:
        self.requests.write(data)
        await self.requests.drain()

    async def wait_stderr(self) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._drain), 1.0)

    def kill(self) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()

    async def close(self) -> None:
        self.kill()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.process.wait(), 5.0)
        self._drain.cancel()
        self._console.cancel()
        self.requests.close()
        for closer in self._closers:
            closer()


class SandboxPool:
    """Keeps `warm` processes started and waiting; each acquire takes one and starts its replacement."""

    def __init__(self, limits: RunLimits | None = None, warm: int = 2) -> None:
        self.limits = limits or RunLimits()
        self.warm = warm
        self._dir = tempfile.TemporaryDirectory(prefix="jarvis-codemode-")
        self._bootstrap = Path(str(resources.files(__package__).joinpath("bootstrap.js")))
        self._ready: asyncio.Queue[asyncio.Task[Sandbox]] = asyncio.Queue()
        self._binary: str | None = None
        self._closed = False

    def _env(self) -> dict[str, str]:
        # A private cache, and nothing of Jarvis's environment: Deno.env is denied anyway.
        return {"DENO_DIR": os.path.join(self._dir.name, "cache"), "NO_COLOR": "1", "DENO_NO_UPDATE_CHECK": "1"}

    async def _start(self) -> Sandbox:
        if self._binary is None:
            self._binary = deno_binary()
        # Two pipes of the protocol's own: the program's stdout and stderr are not where Jarvis reads answers.
        requests_in, requests_out = os.pipe()
        answers_in, answers_out = os.pipe()
        try:
            process = await asyncio.create_subprocess_exec(
                *deno_command(self._binary, self._bootstrap, self.limits, (requests_in, answers_out)),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._env(),
                cwd=self._dir.name,
                pass_fds=(requests_in, answers_out),
            )
        except BaseException:
            for fd in (requests_out, answers_in):
                os.close(fd)
            raise
        finally:
            os.close(requests_in)
            os.close(answers_out)
        loop = asyncio.get_running_loop()
        answers = asyncio.StreamReader(limit=LINE_LIMIT)
        reading, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(answers), os.fdopen(answers_in, "rb", 0)
        )
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(requests_out, "wb", 0)
        )
        requests = asyncio.StreamWriter(transport, protocol, None, loop)
        sandbox = Sandbox(process, answers, requests, self.limits)
        sandbox.on_close(reading.close)
        try:
            await sandbox.ready()
        except BaseException:
            await sandbox.close()
            raise
        return sandbox

    def _refill(self) -> None:
        while not self._closed and self._ready.qsize() < self.warm:
            self._ready.put_nowait(asyncio.create_task(self._start()))

    async def acquire(self) -> Sandbox:
        if self._closed:
            raise RuntimeError("the code-mode sandbox pool is closed")
        self._refill()
        task = self._ready.get_nowait()
        self._refill()
        return await task

    async def close(self) -> None:
        self._closed = True
        while not self._ready.empty():
            task = self._ready.get_nowait()
            task.cancel()
            with contextlib.suppress(BaseException):
                await (await task).close()
        self._dir.cleanup()
