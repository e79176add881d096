"""Task status notifications (SEP-2663) relayed to the listen streams of the callers whose tasks they are.

A caller names its tasks by Jarvis's sealed handles (tasks.py); a server names them by its own ids and says nothing
of who asked. A caller's `subscriptions/listen` with `taskIds` watches the handles that open for it (its token, this
surface); for each server holding some of them Jarvis opens a listen stream of its own naming the server's ids, for
as long as the caller's stream lasts. Every status a server announces, as `notifications/tasks` on such a stream or
as the 2025-era `notifications/tasks/status` on Jarvis's session, is routed by (server, the server's task id) to the
streams that watch that task only, restated with the caller's handle: a task nobody watching holds a handle for
reaches nobody, and the server's own id never leaves Jarvis.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from mcp.shared.exceptions import MCPError

from jarvis.aggregator.downstream.hosting.host import DownstreamHost
from jarvis.aggregator.downstream.proxy.content import namespaced_task
from jarvis.aggregator.downstream.proxy.listen import ListenStream, TaskStatus
from jarvis.aggregator.downstream.proxy.tasks import TaskRef
from jarvis.aggregator.downstream.transport.connection import TASK_NOTICES
from jarvis.common.errors import JarvisError

log = logging.getLogger(__name__)

# The 2025-era notification states the task in that era's words; a `notifications/tasks` frame in SEP-2663's.
_RENAMED = {"ttl": "ttlMs", "pollInterval": "pollIntervalMs"}


@dataclass(eq=False)
class _Watch:
    stream: ListenStream
    handles: dict[TaskRef, str]  # the caller's handle of each task it watches
    namespaced: bool  # a surface that mixes servers: URIs in a task's result say whose they are


class TaskNotices:
    def __init__(self, host: DownstreamHost) -> None:
        self.host = host
        self._watches: dict[tuple[str, str], set[_Watch]] = {}  # (server, the server's task id)
        host.on_notice(self._heard)

    @contextlib.asynccontextmanager
    async def watching(
        self, stream: ListenStream, handles: dict[TaskRef, str], namespaced: bool
    ) -> AsyncIterator[None]:
        """While the block runs, the status of each task in `handles` reaches `stream`."""
        watch = _Watch(stream, handles, namespaced)
        by_server: dict[str, list[str]] = {}
        for ref in handles:
            self._watches.setdefault((ref.server, ref.task_id), set()).add(watch)
            by_server.setdefault(ref.server, []).append(ref.task_id)
        listens = [asyncio.create_task(self._listen(server, ids)) for server, ids in by_server.items()]
        try:
            yield
        finally:
            for listen in listens:
                listen.cancel()
            for ref in handles:
                watches = self._watches.get((ref.server, ref.task_id), set())
                watches.discard(watch)
                if not watches:
                    self._watches.pop((ref.server, ref.task_id), None)

    async def _listen(self, server: str, task_ids: list[str]) -> None:
        """Ask `server` for its tasks' status on a listen stream, when it speaks 2026-07-28 (one that does not may
        still send the 2025-era notification on Jarvis's session: it is heard all the same)."""
        try:
            connection = await self.host.host(server).ensure_running(self.host.options.init_timeout)
            if connection.modern_versions:
                await connection.listen({"taskIds": task_ids})
        except (MCPError, JarvisError) as exc:
            # Status notifications are a hint (SEP-2663: clients must not rely on them); polling still works.
            log.info(
                "task status of downstream server %s not followed: %s",
                server,
                exc,
                extra={"server": server, "error": str(exc)[:300]},
            )

    def _heard(self, server: str, method: str, params: dict[str, Any]) -> None:
        task_id = params.get("taskId")
        if method not in TASK_NOTICES or not isinstance(task_id, str):
            return
        state = {_RENAMED.get(key, key): value for key, value in params.items() if key != "_meta"}
        for watch in list(self._watches.get((server, task_id), ())):
            handle = watch.handles[TaskRef(server, task_id)]
            told = {**state, "taskId": handle}
            watch.stream.deliver(TaskStatus(namespaced_task(server, told) if watch.namespaced else told))
