"""One code run: the program goes to a sandbox, each call it asks for goes to the host, which decides it.

The sandbox's requests are only ever a name and arguments: who is calling is the host's (the caller's token),
never something the program says, so tampering with the sandbox's objects can ask for nothing the caller
could not ask for directly.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from jarvis.aggregator.codemode.limits import RunError, RunLimits
from jarvis.aggregator.codemode.runner import Sandbox, SandboxPool

log = logging.getLogger(__name__)
# `import` in any form (static, dynamic, import.meta) would load modules beside the program; refused before it
# runs. A word inside a string is refused too: simpler to explain than a parser's judgement.
IMPORT = re.compile(r"\bimport\b")
MAX_CODE_CHARS = 100_000


class Host(Protocol):
    async def call(self, name: str, arguments: dict[str, Any]) -> Any: ...

    async def find(self, arguments: dict[str, Any]) -> Any: ...


@dataclass
class CallRecord:
    name: str
    ms: float
    ok: bool
    error: str | None = None


@dataclass
class RunResult:
    value: Any
    console: str
    calls: list[CallRecord] = field(default_factory=list)
    console_dropped: int = 0


def check_code(code: str) -> None:
    if not code.strip():
        raise RunError("code_run needs 'code': a TypeScript or JavaScript program whose return value is the result")
    if len(code) > MAX_CODE_CHARS:
        raise RunError(f"the program is {len(code)} characters; at most {MAX_CODE_CHARS}")
    match = IMPORT.search(code)
    if match is not None:
        line = code.count("\n", 0, match.start()) + 1
        column = match.start() - (code.rfind("\n", 0, match.start()) + 1) + 1
        raise RunError("programs may not import modules: use tools.<name>(args) for everything", line, column)


class Run:
    """The Jarvis side of one program's pipe."""

    def __init__(self, sandbox: Sandbox, host: Host, limits: RunLimits) -> None:
        self.sandbox = sandbox
        self.host = host
        self.limits = limits
        self.calls: list[CallRecord] = []
        self.started = 0
        self.slots = asyncio.Semaphore(limits.concurrent)
        self.tasks: set[asyncio.Task[None]] = set()
        self.replies = asyncio.Lock()

    async def serve(self, code: str) -> RunResult:
        await self.sandbox.write(json.dumps({"code": code}).encode() + b"\n")
        while True:
            line = await self.sandbox.readline()
            if line is None:
                raise await self._crashed()
            try:
                message = json.loads(line)
            except ValueError:
                raise RunError("the sandbox sent a line that is not JSON") from None
            if not isinstance(message, dict):
                raise RunError("the sandbox sent a message that is not an object")
            kind = message.get("t")
            if kind == "done":
                return await self._finish(message)
            if kind in ("call", "find"):
                self.started += 1
                if self.started > self.limits.calls:
                    raise RunError(f"the program made more than {self.limits.calls} tool calls, the most a run may")
                task = asyncio.create_task(self._answer(message))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)

    async def _answer(self, message: dict[str, Any]) -> None:
        name = "tool_find" if message["t"] == "find" else str(message.get("name"))
        async with self.slots:
            started = time.perf_counter()
            args = message.get("args")
            arguments = args if isinstance(args, dict) else {}
            try:
                if message["t"] == "find":
                    value = await self.host.find(arguments)
                else:
                    value = await self.host.call(name, arguments)
                reply: dict[str, Any] = {"id": message["id"], "ok": True, "value": value}
                self.calls.append(CallRecord(name, _ms(started), True))
            except RunError as exc:
                reply = {"id": message["id"], "ok": False, "error": str(exc)}
                self.calls.append(CallRecord(name, _ms(started), False, str(exc)))
            except Exception:
                log.exception("code run: inner call failed", extra={"tool": name})
                reply = {"id": message["id"], "ok": False, "error": f"internal error in {name}"}
                self.calls.append(CallRecord(name, _ms(started), False, "internal error"))
        async with self.replies:
            await self.sandbox.write(json.dumps(reply).encode() + b"\n")

    async def _finish(self, message: dict[str, Any]) -> RunResult:
        if not message.get("ok"):
            error = str(message.get("error"))
            if "Array buffer allocation failed" in error:  # refused by RLIMIT_DATA, or past what V8 allows
                raise self.out_of_memory()
            raise RunError(error, _int(message.get("line")), _int(message.get("column")))
        value = message.get("value")
        size = len(json.dumps(value))
        if size > self.limits.output_bytes:
            raise RunError(f"the return value is {size} bytes of JSON; at most {self.limits.output_bytes}")
        # The console is stdout as Jarvis read it, cut to the bound here whatever the sandbox says it sent.
        console, dropped = await self.sandbox.console_text(max(0, _int(message.get("console_bytes")) or 0))
        kept = console.encode()[: self.limits.output_bytes]
        dropped += len(console.encode()) - len(kept) + max(0, _int(message.get("console_dropped")) or 0)
        return RunResult(value, kept.decode(errors="ignore"), self.calls, dropped)

    def out_of_memory(self) -> RunError:
        return RunError(
            f"the program ran out of memory: it used more than {self.limits.memory_mb} MiB "
            f"(of which {self.limits.heap_mb} MiB of heap) and was stopped"
        )

    async def _crashed(self) -> RunError:
        await self.sandbox.wait_stderr()
        stderr = self.sandbox.stderr.lower()
        if self.sandbox.over_memory or b"out of memory" in stderr or b"heap limit" in stderr:
            return self.out_of_memory()
        return RunError("the sandbox ended without an answer (an output line over its bound, or a crash)")


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


async def run_code(
    pool: SandboxPool,
    code: str,
    host: Host,
    timeout: float | None = None,
    limits: RunLimits | None = None,
) -> RunResult:
    """Run `code` in a fresh sandbox within `limits` (the pool's by default); RunError says why it has no result.
    Cancelling this cancels the run and the calls it has in flight."""
    check_code(code)
    limits = limits or pool.limits
    wall = limits.wall_time(timeout)
    sandbox = await pool.acquire()
    run = Run(sandbox, host, limits)
    watchdog = asyncio.create_task(sandbox.watch_memory())
    try:
        return await asyncio.wait_for(run.serve(code), wall)
    except TimeoutError:
        raise RunError(f"the program ran past its wall time of {wall:g} s") from None
    finally:
        watchdog.cancel()
        sandbox.kill()
        for task in list(run.tasks):
            task.cancel()
        await sandbox.close()
