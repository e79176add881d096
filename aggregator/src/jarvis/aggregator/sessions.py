"""Which token opened each live MCP session, kept exactly as long as the session lives.

The gate records an owner when a response hands out a new session id; the session managers tell
the ledger when a session ends, however it ends (DELETE, idle timeout, crash, a refused opening
request). Nothing is ever evicted to make room: a live session keeps its owner, and a token that
already holds `max_per_token` sessions is refused another instead.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from typing import Any

from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

_REMEMBER_ENDED = 10_000


class SessionLedger:
    def __init__(self, max_per_token: int) -> None:
        self.max_per_token = max_per_token
        self._owner: dict[str, str] = {}
        self._open: Counter[str] = Counter()
        # Ids that ended lately: a response of a request still in flight when its session ended must not
        # bring the owner entry back (session ids are random and never reused).
        self._ended: OrderedDict[str, None] = OrderedDict()

    def owner(self, session_id: str) -> str | None:
        return self._owner.get(session_id)

    def owners(self) -> dict[str, str]:
        """Each live session's owner (a copy)."""
        return dict(self._owner)

    def open_count(self, token_id: str) -> int:
        return self._open[token_id]

    def at_limit(self, token_id: str) -> bool:
        return self.max_per_token > 0 and self._open[token_id] >= self.max_per_token

    def opened(self, session_id: str, token_id: str) -> None:
        if session_id in self._owner or session_id in self._ended:
            return
        self._owner[session_id] = token_id
        self._open[token_id] += 1

    def ended(self, session_id: str) -> None:
        # The manager answers before it discards, so an id always goes out (and is recorded) before it
        # ends; it may discard one session twice (after a DELETE, then as its task winds down).
        token_id = self._owner.pop(session_id, None)
        if token_id is None:
            return
        self._ended[session_id] = None
        if len(self._ended) > _REMEMBER_ENDED:
            self._ended.popitem(last=False)
        self._open[token_id] -= 1
        if self._open[token_id] <= 0:
            del self._open[token_id]

    def __len__(self) -> int:
        return len(self._owner)


class TrackedSessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager, telling a ledger when each session ends.

    `_discard_session` is the SDK's one exit for every stateful session (client DELETE, idle
    timeout, crash, refused opening request); the pinned SDK version keeps it that way.
    """

    def __init__(self, ledger: SessionLedger, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ledger = ledger

    async def end(self, session_ids: set[str]) -> int:
        """End these sessions now, if this manager holds them (a disabled person's); how many it ended."""
        ended = 0
        for session_id in session_ids:
            transport = self._server_instances.get(session_id)
            if transport is not None:
                await self._discard_session(session_id, transport)
                ended += 1
        return ended

    async def _discard_session(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        self._ledger.ended(session_id)
        await super()._discard_session(session_id, transport)
