"""An agent's credential lives as long as its session (decision 0058): the check every call made with one passes.

The credential is in the agent's environment from its first moment, and no agent CLI can be handed a new one while
it runs, so it cannot be short-lived and refreshed like a person's access token. Instead it is good for the longest
a session may run, and only while its session does: each call asks the runtime for the session's state at most once
per `ttl` seconds per session and process. A session that has exited, been ended or was lost never runs again, so
that answer is kept; a leaked credential is then dead within `ttl` of its session's end, however long it had left.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from jarvis.aggregator.tooling.principal import Principal
from jarvis.common.errors import NotFound, Unauthenticated

FINISHED_STATES = frozenset({"exited", "ended", "lost"})  # the runtime's (runtime/domain/models.py)


class SessionStates(Protocol):
    """The runtime as this check needs it (gateways/runtime.py's `get_session`)."""

    async def get_session(self, project_id: str, session_id: str) -> Any: ...


class LiveAgentSessions:
    def __init__(self, runtime: SessionStates, ttl: float = 5.0, max_entries: int = 10_000) -> None:
        self.runtime = runtime
        self.ttl = ttl
        self.max_entries = max_entries
        self._known: dict[tuple[str, str], tuple[float, str | None]] = {}  # -> (good until, why refused or None)

    async def check(self, principal: Principal) -> None:
        """Unauthenticated(why) when the session `principal`'s credential was minted for no longer runs; the
        runtime's errors (unreachable) pass through, as the registry's do for a person's standing."""
        projects = principal.bound_projects
        if len(projects) != 1:
            raise Unauthenticated("an agent credential is bound to exactly one project; this one is not")
        key = (projects[0], principal.agent_session)
        now = time.monotonic()
        known = self._known.get(key)
        if known is None or known[0] <= now:
            why = await self._refusal(*key)
            if len(self._known) >= self.max_entries:
                self._known.clear()  # a burst of distinct sessions: start over rather than grow without bound
            self._known[key] = (float("inf") if why else now + self.ttl, why)
            known = self._known[key]
        if known[1] is not None:
            raise Unauthenticated(known[1])

    async def _refusal(self, project_id: str, session_id: str) -> str | None:
        try:
            session = await self.runtime.get_session(project_id, session_id)
        except NotFound:
            return f"the agent session {session_id} this credential was made for is gone; its credential with it"
        if session.state in FINISHED_STATES:
            return f"the agent session {session_id} is over ({session.state}); the credential made for it ended with it"
        return None
