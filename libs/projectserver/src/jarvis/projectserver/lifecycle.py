"""ProjectServerLifecycleManager: run a scaffolded project server and talk MCP to it.

Use it inside its own async context, which owns the supervising task:

    async with ProjectServerLifecycleManager(project_dir) as manager:
        manager.on(CRASH_EVENT, lambda crash: ...)
        await manager.start()          # spawned, MCP initialize done
        await manager.call_tool("inspect_state", {"path": "cache"})
        await manager.stop()           # SIGTERM, SIGKILL after 5 s

The server runs as an argv list (never a shell) in a new session, so it leads its own process
group: stopping signals the whole group, and whatever it started dies with it.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import sys
from collections import defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import Process, TaskGroup, TaskStatus
from mcp import Client

from jarvis.projectserver.transport import process_transport

log = logging.getLogger(__name__)

CRASH_EVENT = "projectserver:crash"
READY_EVENT = "projectserver:ready"
GRACE_SECONDS = 5.0
STARTUP_TIMEOUT_SECONDS = 30.0
_POLL = 0.02
# All a Python server needs from Jarvis's environment: where programs are, the locale, the time zone
# and the temp dir. Nothing else passes: Jarvis's own variables include credentials (AWS_*,
# JIRA_API_TOKEN, database URLs) that the project's code, and anyone reading its state, must not see.
PASSED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT")


def minimal_environment(source: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables of PASSED_ENV that `source` (default: this process's environment) sets."""
    values = os.environ if source is None else source
    return {name: values[name] for name in PASSED_ENV if name in values}


class ProjectServerError(Exception):
    """The project server could not be started or is not running."""


@dataclass(frozen=True)
class ProjectServerCrash:
    """Payload of `projectserver:crash`: how the server ended and what it said last."""

    pid: int
    exit_code: int | None
    stderr_tail: str


def default_argv(project_dir: Path, python: str = sys.executable) -> list[str]:
    """How to run the scaffolded server of `project_dir`."""
    return [python, "-m", "project_mcp_server", "--root", str(project_dir)]


class ProjectServerLifecycleManager:
    """Starts, supervises and stops one project server; emits events on crash."""

    def __init__(
        self,
        project_dir: Path,
        *,
        argv: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,  # the whole environment; default: minimal_environment()
        startup_timeout: float = STARTUP_TIMEOUT_SECONDS,
        grace_seconds: float = GRACE_SECONDS,
        stderr_lines: int = 40,
    ) -> None:
        self.project_dir = project_dir.resolve()
        self.argv = list(argv or default_argv(self.project_dir))
        source = self.project_dir / "mcp-server" / "src"
        # An explicit environment, never an inherited one (see PASSED_ENV).
        base = minimal_environment() if env is None else dict(env)
        # The server's own package comes from the project, ahead of anything else on the path.
        base["PYTHONPATH"] = os.pathsep.join(p for p in (str(source), base.get("PYTHONPATH", "")) if p)
        self.env = base
        self.startup_timeout = startup_timeout
        self.grace_seconds = grace_seconds
        self._stderr: deque[str] = deque(maxlen=stderr_lines)
        self._listeners: defaultdict[str, list[Callable[[Any], None]]] = defaultdict(list)
        self._stack = AsyncExitStack()
        self._tg: TaskGroup | None = None
        self._process: Process | None = None
        self.exit_code: int | None = None  # of the last server process, once it has ended
        self._client: Client | None = None
        # Events need a running event loop, so start() creates them.
        self._stop: anyio.Event | None = None
        self._done: anyio.Event | None = None

    # -- event bus ---------------------------------------------------------------------------
    def on(self, event: str, callback: Callable[[Any], None]) -> Callable[[], None]:
        """Call `callback(payload)` on `event`; returns a function that unsubscribes."""
        self._listeners[event].append(callback)
        return lambda: self._listeners[event].remove(callback)

    def _emit(self, event: str, payload: Any) -> None:
        for callback in list(self._listeners[event]):
            try:
                callback(payload)
            except Exception:  # one bad listener must not hide the event from the others
                log.exception("listener of %s failed", event)

    # -- context -----------------------------------------------------------------------------
    async def __aenter__(self) -> ProjectServerLifecycleManager:
        self._tg = await self._stack.enter_async_context(anyio.create_task_group())
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with anyio.CancelScope(shield=True):
            await self.stop()
        self._tg = None
        await self._stack.aclose()

    # -- state -------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        """True between a successful `start()` and the server's exit."""
        return self._client is not None

    @property
    def pid(self) -> int | None:
        """The server's pid (also its process group id) while it runs."""
        return self._process.pid if self._process is not None and self._process.returncode is None else None

    @property
    def client(self) -> Client:
        """The MCP client connected to the running server."""
        if self._client is None:
            raise ProjectServerError("the project server is not running; call start() first")
        return self._client

    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr."""
        return "\n".join(self._stderr)

    # -- start / stop ------------------------------------------------------------------------
    async def start(self) -> None:
        """Spawn the server and return once it has answered MCP `initialize`.

        Raises ProjectServerError if it exits or does not answer within `startup_timeout`.
        """
        if self._tg is None:
            raise RuntimeError("enter 'async with ProjectServerLifecycleManager(...)' before start()")
        if self.running:
            return
        self._stop, self._done = anyio.Event(), anyio.Event()
        await self._tg.start(self._supervise)

    async def stop(self) -> None:
        """SIGTERM to the server's process group, SIGKILL after the grace period; waits for the end."""
        if self._process is None or self._stop is None or self._done is None:
            return
        self._stop.set()
        await self._done.wait()

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], timeout: float | None = None
    ) -> types.CallToolResult:
        """Call a tool of the running server (MCP errors such as -32602 raise `MCPError`)."""
        return await self.client.call_tool(name, dict(arguments), read_timeout_seconds=timeout)

    # -- supervision -------------------------------------------------------------------------
    async def _supervise(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        assert self._stop is not None
        assert self._done is not None
        self._stderr.clear()
        self.exit_code = None
        process = await anyio.open_process(self.argv, cwd=self.project_dir, env=self.env, start_new_session=True)
        self._process = process
        stderr_done = anyio.Event()
        started = crashed = False
        failure = ""
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._pump_stderr, process, stderr_done)
                try:
                    with anyio.CancelScope(deadline=anyio.current_time() + self.startup_timeout) as startup:
                        async with Client(process_transport(process), mode="legacy") as client:
                            startup.deadline = math.inf  # the handshake is done; the rest may take forever
                            self._client, started = client, True
                            task_status.started()
                            self._emit(READY_EVENT, process.pid)
                            crashed = await self._wait_for_exit_or_stop(process)
                            self._client = None
                            await self._terminate(process)
                    if startup.cancelled_caught:
                        failure = f"no answer to MCP initialize within {self.startup_timeout:g} s"
                except Exception as exc:  # reported with the server's stderr below
                    failure = f"{type(exc).__name__}: {exc}"
                finally:
                    self._client = None
                    with anyio.CancelScope(shield=True):
                        await self._terminate(process)
                        with anyio.move_on_after(1.0):
                            await stderr_done.wait()  # the crash report needs the complete tail
                    tg.cancel_scope.cancel()
        finally:
            self.exit_code = process.returncode
            self._process = None
            self._done.set()
        if crashed:
            log.warning("project server %s exited with %s", process.pid, process.returncode)
            self._emit(CRASH_EVENT, ProjectServerCrash(process.pid, process.returncode, self.stderr_tail()))
        elif not started:
            raise ProjectServerError(
                f"project server did not start ({failure or 'it exited'}; exit code {process.returncode}); "
                f"stderr:\n{self.stderr_tail() or '(empty)'}"
            )

    async def _wait_for_exit_or_stop(self, process: Process) -> bool:
        """True when the server exited on its own, False when stop() asked for it."""
        stop = self._stop
        assert stop is not None
        while process.returncode is None:
            if stop.is_set():
                return False
            with anyio.move_on_after(_POLL):
                await stop.wait()
        return not stop.is_set()

    async def _terminate(self, process: Process) -> None:
        """SIGTERM the group, SIGKILL it after the grace period, then kill any leftover member."""
        if process.returncode is None:
            _signal_group(process.pid, signal.SIGTERM)
            if not await _exited(process, self.grace_seconds):
                log.warning(
                    "project server %s ignored SIGTERM for %g s; sending SIGKILL", process.pid, self.grace_seconds
                )
                _signal_group(process.pid, signal.SIGKILL)
                await _exited(process, 5.0)
        _signal_group(process.pid, signal.SIGKILL)  # children the server left behind: no orphans

    async def _pump_stderr(self, process: Process, done: anyio.Event) -> None:
        assert process.stderr is not None
        buffer = b""
        try:
            async for chunk in process.stderr:
                *lines, buffer = (buffer + chunk).split(b"\n")
                for line in lines:
                    self._stderr.append(line.decode(errors="replace"))
                    log.debug("project server: %s", self._stderr[-1])
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        finally:
            if buffer:
                self._stderr.append(buffer.decode(errors="replace"))
            done.set()


async def _exited(process: Process, timeout: float) -> bool:
    """Poll the return code (process.wait() would also wait for pipes a child may hold open)."""
    with anyio.move_on_after(timeout):
        while process.returncode is None:  # noqa: ASYNC110 - an exit code has no event to wait on
            await anyio.sleep(_POLL)
    return process.returncode is not None


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is already gone
        os.killpg(pgid, signum)
