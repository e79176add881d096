"""Keeps one downstream server running while it is wanted: start, watch, restart with backoff, stop.

One `ServerHost` per installed server per aggregator, shared by every agent session: the MCP
session to the server is multiplexed, not opened per caller. A background task owns the
connection (anyio scopes must be entered and left in one task); callers only wait for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from jarvis.aggregator.downstream.hosting.lists import CHANGE_NOTICES, ONLY_TOOLS, TOOLS, Lists
from jarvis.aggregator.downstream.hosting.snapshot import Snapshot
from jarvis.aggregator.downstream.hosting.tools import ServedTools
from jarvis.aggregator.downstream.transport.changes import hear_changes
from jarvis.aggregator.downstream.transport.connection import Connection, LaunchPlan, connect
from jarvis.aggregator.downstream.transport.relay import Caller, CallerRelay, calling, hears_call_logs
from jarvis.aggregator.downstream.transport.stdio import OVERSIZED
from jarvis.aggregator.tooling.background import Background
from jarvis.common.errors import DeadlineExceeded, FailedPrecondition, Unavailable
from jarvis.common.urls import masked_urls

log = logging.getLogger(__name__)
RELIST_FLOOR_SECONDS = 5.0  # a server's tools are listed again on their `ttlMs` at most this often

STOPPED, STARTING, RUNNING, FAILING = "stopped", "starting", "running", "failing"
BACKOFF_FIRST, BACKOFF_MAX = 0.5, 60.0
STABLE_SECONDS = 30.0  # running this long clears the failure count, so the next crash restarts fast


@dataclass
class HostOptions:
    init_timeout: float = 30.0
    call_timeout: float = 300.0
    list_timeout: float = 30.0
    list_wait: float = 2.0  # a surface's tools/list waits this long for servers never started (see the setting)
    # Requests sent by Jarvis itself: on its own connections to streamable-HTTP servers (http_calls.py), as its own
    # lines on stdio servers' pipes (pipe_calls.py); off: through the SDK's session.
    own_requests: bool = True


ToolsLoader = Callable[["ServerHost", Connection], Awaitable[ServedTools]]


class ServerHost:
    def __init__(
        self,
        name: str,
        plan: LaunchPlan | str,
        options: HostOptions,
        load_tools: ToolsLoader,
        on_lists_changed: Callable[[str, Lists], None],
        *,
        interactive: bool = False,
        on_resource_updated: Callable[[str, str], None] | None = None,
        on_notice: Callable[[str, str, dict[str, Any]], None] | None = None,
    ) -> None:
        self.name = name
        # An interactive server may ask its caller (sampling, elicitation): its tool calls take turns.
        self.relay = CallerRelay(name) if interactive else None
        # A string is why this server cannot be hosted here (e.g. no runtime service for containers).
        self.plan = plan
        self.options = options
        self._load_tools = load_tools
        self._on_lists_changed = on_lists_changed  # (server, which of its lists may have changed)
        self._on_resource_updated = on_resource_updated
        self._on_notice = on_notice
        self.state = STOPPED
        self.tools = ServedTools()
        self.connection: Connection | None = None
        self.started_at: float | None = None
        # restarts: stops while running; start_failures: attempts that never ran (both only grow, for metrics);
        # failures: the current run of failures, which sets the backoff and clears once stable.
        self.restarts = self.start_failures = self.failures = self.calls = self.in_flight = 0
        self.last_error = ""
        self.last_error_at: float | None = None
        self.last_used = time.monotonic()
        self.eager = False
        self._wanted = False
        self._retry_at: float | None = None
        self._attempts = 0  # finished start attempts; callers wait for the count to move
        self._changed = asyncio.Event()  # set and replaced on every state change
        self._task: asyncio.Task[None] | None = None
        self._background = Background()  # tool reloads after a change notice or an approval

    # ------------------------------------------------------------ control

    async def ensure_running(self, wait: float) -> Connection:
        """The live connection, starting the server if needed; Unavailable with the reason if it cannot be."""
        self.last_used = time.monotonic()
        if self.connection is not None and self.state == RUNNING:
            return self.connection
        if isinstance(self.plan, str):
            raise Unavailable(f"server '{self.name}' cannot be hosted: {self.plan}")
        if self._retry_at is not None and self._retry_at - time.monotonic() > wait:
            delay = self._retry_at - time.monotonic()
            raise Unavailable(
                f"server '{self.name}' is failing ({self.last_error}); next restart attempt in {delay:.1f} s"
            )
        self._want()
        seen = self._attempts
        deadline = time.monotonic() + wait
        # Wait for the outcome of the attempt under way or the next one (backoff is honoured, not skipped).
        while self.state != RUNNING and self._attempts == seen and (left := deadline - time.monotonic()) > 0:
            changed = self._changed
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), left)
        if self.connection is None or self.state != RUNNING:
            reason = self.last_error if self._attempts != seen else f"it did not start within {wait:g} s"
            raise Unavailable(f"server '{self.name}' is not running: {reason}")
        return self.connection

    def _want(self) -> None:
        self._wanted = True
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"downstream-{self.name}")

    def start_eagerly(self) -> None:
        if not isinstance(self.plan, str):
            self._want()

    async def stop(self, reason: str = "") -> None:
        """Stop the server and any retrying; idempotent."""
        self._wanted = False
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._background.close(cancel=True)  # a reload under way reads from the connection that ended
        self._set_stopped()
        if reason:
            log.info(
                "downstream server %s stopped: %s", self.name, reason, extra={"server": self.name, "reason": reason}
            )

    async def restart(self, wait: float) -> Connection:
        await self.stop()
        self.failures, self._retry_at = 0, None
        return await self.ensure_running(wait)

    def _announce(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    # ------------------------------------------------------------ calls

    async def call(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None,
        progress: ProgressFnT | None = None,
        caller: Caller | None = None,
        *,
        caller_version: str | None = None,
        input_schema: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A request to the server; a crash mid-call becomes an Unavailable naming the server and why.

        On an interactive server a tool call waits its turn, and what the server asks meanwhile goes to `caller`.
        It goes in the caller's protocol version (`caller_version`) when the server speaks it. A 2026-07-28
        caller hears the log messages the server sends on the call's own stream (it asked for them in its
        request's `_meta`, which the server gets); a 2025-era caller's are the session's (logs.py).
        """
        connection = await self.ensure_running(self.options.init_timeout)
        self.calls += 1
        self.in_flight += 1
        relay = self.relay if method == "tools/call" else None
        turn = relay.serving(caller) if relay is not None else contextlib.nullcontext()
        hears_logs = caller if hears_call_logs(method, caller_version, params) else None
        try:
            async with turn:
                with calling(hears_logs):
                    return await connection.request(
                        method,
                        params,
                        timeout or self.options.call_timeout,
                        progress,
                        version=connection.version_for(caller_version),
                        input_schema=input_schema,
                    )
        except MCPError as exc:
            if exc.error.code == types.CONNECTION_CLOSED or self._exited(connection):
                if connection.child is not None:  # stdout closes first; give the exit status a moment to arrive
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(connection.child.exited.wait(), 1.0)
                raise Unavailable(
                    f"server '{self.name}' stopped during the call: {self._exit_reason(connection)}; "
                    "it is being restarted"
                ) from None
            if isinstance(exc.error.data, dict) and exc.error.data.get("jarvis") == OVERSIZED:
                raise FailedPrecondition(exc.error.message) from None  # ours, not the server's: a tool error
            if exc.error.code == types.REQUEST_TIMEOUT:
                raise DeadlineExceeded(
                    f"server '{self.name}' did not answer {method} within "
                    f"{timeout or self.options.call_timeout:g} s; the call was cancelled"
                ) from None
            raise
        finally:
            self.in_flight -= 1
            self.last_used = time.monotonic()

    @staticmethod
    def _exited(connection: Connection) -> bool:
        return connection.child is not None and connection.child.exited.is_set()

    @staticmethod
    def _exit_reason(connection: Connection) -> str:
        child = connection.child
        return child.describe_exit() if child is not None else "the connection closed"

    # ------------------------------------------------------------ the owning task

    async def _run(self) -> None:
        assert not isinstance(self.plan, str)
        while self._wanted:
            await self._wait_backoff()
            if not self._wanted:
                break
            self.state = STARTING
            self._announce()
            opened: Connection | None = None
            try:
                async with connect(
                    self.plan,
                    init_timeout=self.options.init_timeout,
                    on_notification=self._on_notification,
                    relay=self.relay,
                    on_resource_updated=self._resource_updated,
                    on_notice=self._notice,
                ) as connection:
                    opened = connection
                    self.tools = await self._load_tools(self, connection)
                    self.connection, self.state, self.started_at = connection, RUNNING, time.time()
                    self._retry_at = None
                    self._attempts += 1
                    self._announce()
                    self._on_lists_changed(self.name, ONLY_TOOLS)
                    log.info(
                        "downstream server %s running with %d tools",
                        self.name,
                        len(self.tools),
                        extra={"server": self.name, "tools": len(self.tools)},
                    )
                    await self._until_lost(connection)
                    self._record_failure(f"{self._exit_reason(connection)}", crashed=True)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                child = opened.child if opened is not None else None
                context = f" ({child.describe_exit()})" if child is not None else ""
                self._record_failure(_describe(exc, self.options.init_timeout) + context, crashed=False)
            finally:
                if self.connection is not None:
                    self.connection = None
                    self._on_lists_changed(self.name, ONLY_TOOLS)

    async def _until_lost(self, connection: Connection) -> None:
        watchers: list[asyncio.Future[Any]] = [asyncio.ensure_future(connection.lost.wait())]
        watchers.append(asyncio.ensure_future(hear_changes(connection)))  # ends only with the connection
        watchers.append(asyncio.ensure_future(self._relist_when_stale(connection)))  # likewise
        if connection.child is not None:
            watchers.append(asyncio.ensure_future(connection.child.exited.wait()))
        try:
            await asyncio.wait(watchers, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for watcher in watchers:
                watcher.cancel()

    async def _wait_backoff(self) -> None:
        if self._retry_at is not None:
            await asyncio.sleep(max(0.0, self._retry_at - time.monotonic()))

    def _record_failure(self, error: str, *, crashed: bool) -> None:
        error = masked_urls(error)  # an HTTP client's error quotes the server's URL, credentials and all
        if crashed:
            self.restarts += 1
            if self.started_at is not None and time.time() - self.started_at > STABLE_SECONDS:
                self.failures = 0
        self.failures += 1
        delay = min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** (self.failures - 1))
        self.last_error, self.last_error_at = error, time.time()
        self.state, self.started_at = FAILING, None
        self._retry_at = time.monotonic() + delay
        if not crashed:
            self._attempts += 1
            self.start_failures += 1
        self._announce()
        log.warning(
            "downstream server %s failed: %s; retrying in %.1f s",
            self.name,
            error,
            delay,
            extra={"server": self.name, "error": error, "retry_in_seconds": delay},
        )

    async def _on_notification(self, method: str) -> None:
        kind = CHANGE_NOTICES.get(method)
        if kind == TOOLS:
            self.reload_tools()  # the server changed its tools: list them again and re-check their pins (then told)
        elif kind is not None:  # prompts and resources are listed from the server when asked: only tell
            self._on_lists_changed(self.name, frozenset({kind}))

    async def _resource_updated(self, uri: str) -> None:
        if self._on_resource_updated is not None:
            self._on_resource_updated(self.name, uri)

    async def _notice(self, method: str, params: dict[str, Any]) -> None:
        if self._on_notice is not None:
            self._on_notice(self.name, method, params)

    async def _relist_when_stale(self, connection: Connection) -> None:
        """List the tools again each time the server's `ttlMs` for them runs out (SEP-2549), so a server that tells
        no changes is not served from a list it said went stale; at most every RELIST_FLOOR_SECONDS. A server that
        gave no hint, or 0 ("stale at once"), is listed again only when it tells of a change or restarts."""
        while not connection.lost.is_set():
            ttl = connection.tools_ttl_ms
            if not ttl:
                await connection.lost.wait()
                return
            await asyncio.sleep(max(ttl / 1000, RELIST_FLOOR_SECONDS))
            await self._reload_tools(connection, tell_if_same=False)

    def reload_tools(self) -> None:
        """List the tools again in the background (after a change notice or an approval)."""
        if self.connection is not None:
            self._background.spawn(self._reload_tools(self.connection))

    async def _reload_tools(self, connection: Connection, *, tell_if_same: bool = True) -> None:
        """List the tools again; listeners are told, unless `tell_if_same` is off and nothing changed (a relisting
        on a timer that found the same tools is no news to anyone)."""
        before = self.tools
        try:
            self.tools = await self._load_tools(self, connection)
        except Exception as exc:
            log.warning(
                "could not reload the tools of downstream server %s: %s",
                self.name,
                masked_urls(str(exc)),
                extra={"server": self.name, "error": masked_urls(str(exc))},
            )
            return
        if tell_if_same or self.tools != before:
            self._on_lists_changed(self.name, ONLY_TOOLS)

    def _set_stopped(self) -> None:
        self.connection, self.state, self.started_at, self._retry_at = None, STOPPED, None, None
        self._announce()

    # ------------------------------------------------------------ status

    def snapshot(self) -> Snapshot:
        child = self.connection.child if self.connection is not None else None
        retry = None if self._retry_at is None or not self._wanted else max(0.0, self._retry_at - time.monotonic())
        return Snapshot(
            state=self.state if not isinstance(self.plan, str) else FAILING,
            pid=child.pid if child is not None else None,
            uptime_seconds=round(time.time() - self.started_at, 1) if self.started_at else None,
            tools=len(self.tools),
            restarts=self.restarts,
            failures=self.failures,
            last_error=self.last_error or (self.plan if isinstance(self.plan, str) else ""),
            last_error_at=self.last_error_at,
            retry_in_seconds=None if retry is None else round(retry, 1),
            calls=self.calls,
            in_flight=self.in_flight,
            quarantined=sorted(self.tools.quarantined),
            schema_fixes=dict(self.tools.fixes),
            container=(child.container or None) if child is not None else None,
            start_failures=self.start_failures,
            speaks=self.connection.speaks if self.connection is not None else None,
        )


def _describe(exc: BaseException, init_timeout: float) -> str:
    if isinstance(exc, TimeoutError):
        return f"did not answer initialize within {init_timeout:g} s"
    if isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        if inner:
            return _describe(inner[0], init_timeout)
    if isinstance(exc, MCPError):
        return f"answered with error {exc.error.code}: {exc.error.message}"
    return f"{exc.__class__.__name__}: {exc}" if str(exc) else exc.__class__.__name__
