"""Deno processes for code mode: started ahead of need with every permission denied, one program each.

A process serves a single run and is then killed, so nothing one program leaves behind (globals, timers, a heap
near its bound) reaches the next caller's. Warmth comes from starting the next processes before they are needed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
from importlib import resources
from pathlib import Path

from jarvis.aggregator.codemode.limits import RunLimits

log = logging.getLogger(__name__)
STDERR_KEPT = 4096  # bytes of a process's stderr kept to explain a crash
LINE_LIMIT = 8 * 1024 * 1024  # the longest line Jarvis reads from a program (its final answer included)


def deno_binary() -> str:
    import deno  # type: ignore[import-untyped]  # the PyPI package that ships the binary

    return str(deno.find_deno_bin())


def deno_command(binary: str, bootstrap: Path, limits: RunLimits) -> list[str]:
    """No --allow-* flag: file system, network, environment, subprocesses, FFI and imports are all denied,
    and --no-prompt makes each denial an error instead of a question on a terminal nobody watches."""
    v8 = f"--max-old-space-size={limits.heap_mb},--disallow-code-generation-from-strings,--stack-size=984"
    return [
        binary,
        "run",
        "--no-prompt",
        "--no-remote",
        "--no-npm",
        "--no-config",
        "--no-lock",
        "--no-check",
        f"--v8-flags={v8}",
        str(bootstrap),
        str(limits.output_bytes),
    ]


class Sandbox:
    """One started Deno process, ready for one program."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.stderr = b""
        self._drain = asyncio.create_task(self._read_stderr())

    async def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        while chunk := await self.process.stderr.read(65536):
            self.stderr = (self.stderr + chunk)[-STDERR_KEPT:]

    async def ready(self) -> None:
        line = await self.readline()
        if line is None:
            await self.wait_stderr()
            raise RuntimeError(f"the sandbox did not start: {self.stderr.decode(errors='replace')[-500:]}")

    async def readline(self) -> bytes | None:
        assert self.process.stdout is not None
        try:
            line = await self.process.stdout.readline()
        except (ValueError, asyncio.LimitOverrunError):
            return None
        return line or None

    async def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        await self.process.stdin.drain()

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
        process = await asyncio.create_subprocess_exec(
            *deno_command(self._binary, self._bootstrap, self.limits),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._env(),
            cwd=self._dir.name,
            limit=LINE_LIMIT,
        )
        sandbox = Sandbox(process)
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
