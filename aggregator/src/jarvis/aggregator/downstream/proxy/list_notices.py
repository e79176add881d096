"""`list_changed` for 2025-era callers of a proxy surface: the sessions that listed a target's tools, prompts or
resources are told when that target's lists may have changed (membership, restarts, the servers' own notices)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from jarvis.aggregator.downstream.hosting.lists import PROMPTS, RESOURCES, TOOLS, Lists
from jarvis.aggregator.downstream.proxy.targets import Targets
from jarvis.aggregator.downstream.proxy.watches import ResourceWatches
from jarvis.aggregator.tooling.background import Background

_MAX_SESSIONS = 10_000


class ListChangeNotices:
    """Follows the host's changes for one kind of target; keeps the tasks that tell sessions until they are done."""

    def __init__(self, targets: Targets, watches: ResourceWatches) -> None:
        self.targets = targets
        self.watches = watches
        # Sessions that listed tools, prompts or resources, by target: they are the ones a list_changed tells something.
        self._sessions: dict[str, OrderedDict[str, ServerSession]] = {}
        self._telling = Background()
        targets.host.subscribe(self.changed)

    def remember(self, target: str, ctx: ServerRequestContext[Any]) -> None:
        """Keep the 2025-era session of a listing request, to tell it when the target's lists change."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS or ctx.request is None:
            return  # 2026-era clients must not see tools/list vary per connection; they get no notification
        session_id = getattr(ctx.request, "headers", {}).get("mcp-session-id")
        if not session_id:
            return
        sessions = self._sessions.setdefault(target, OrderedDict())
        sessions[session_id] = ctx.session
        sessions.move_to_end(session_id)
        while len(sessions) > _MAX_SESSIONS:
            sessions.popitem(last=False)

    def changed(self, profiles: set[str], servers: set[str], lists: Lists) -> None:
        targets = self.targets.changed(profiles, servers)
        self.watches.lists_changed(targets, lists)
        for target in targets:
            for session_id, session in list(self._sessions.get(target, {}).items()):
                self._telling.spawn(self._tell(target, session_id, session, lists))

    async def close(self) -> None:
        """Wait for the notices being sent (each ends when its session answers or is found gone)."""
        await self._telling.close()

    async def _tell(self, target: str, session_id: str, session: ServerSession, lists: Lists) -> None:
        try:
            if TOOLS in lists:
                await session.send_tool_list_changed()
            if PROMPTS in lists:
                await session.send_prompt_list_changed()
            if RESOURCES in lists:
                await session.send_resource_list_changed()
        except Exception:  # the session is gone (closed, expired): forget it
            self._sessions.get(target, OrderedDict()).pop(session_id, None)
