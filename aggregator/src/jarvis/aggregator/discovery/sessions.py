"""Each MCP session's active tools: in memory for one process, in Redis when replicas must agree.

A key is derived from the token and the MCP session id together, so a session id alone (which
travels in a header) never reaches another token's tools, and Redis never sees either in clear.
Sets expire after `ttl` seconds without use.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from jarvis.common.errors import Unavailable

DAY = 24 * 3600.0


def session_key(token_id: str, session_id: str) -> str:
    return hashlib.sha256(f"{token_id}\0{session_id}".encode()).hexdigest()


class ActiveSets(Protocol):
    async def get(self, key: str) -> list[str]:
        """The session's active tool names, in the order they were loaded."""
        ...

    async def add(self, key: str, names: Sequence[str]) -> list[str]:
        """Add `names` (already active ones are kept where they are); return the whole set."""
        ...

    async def close(self) -> None: ...


class MemoryActiveSets:
    """One process's sessions; the least recently used are dropped beyond `max_sessions`."""

    def __init__(self, ttl: float = DAY, max_sessions: int = 50_000) -> None:
        self._ttl = ttl
        self._max = max_sessions
        self._sets: OrderedDict[str, tuple[float, list[str]]] = OrderedDict()

    async def get(self, key: str) -> list[str]:
        found = self._sets.get(key)
        if found is None or found[0] < time.monotonic():
            self._sets.pop(key, None)
            return []
        self._sets[key] = (time.monotonic() + self._ttl, found[1])
        self._sets.move_to_end(key)
        return list(found[1])

    async def add(self, key: str, names: Sequence[str]) -> list[str]:
        current = await self.get(key)
        current += [n for n in dict.fromkeys(names) if n not in current]
        self._sets[key] = (time.monotonic() + self._ttl, current)
        self._sets.move_to_end(key)
        while len(self._sets) > self._max:
            self._sets.popitem(last=False)
        return list(current)

    async def close(self) -> None:
        self._sets.clear()


class RedisActiveSets:
    """Sessions shared by every replica: one sorted set per session, scored by when a tool was loaded."""

    PREFIX = "jarvis:discovery:active:"

    def __init__(self, url: str, ttl: float = DAY) -> None:
        self._redis = aioredis.Redis.from_url(url, socket_timeout=2.0, socket_connect_timeout=2.0)
        self._ttl = int(ttl)

    async def get(self, key: str) -> list[str]:
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.zrange(self.PREFIX + key, 0, -1)
                pipe.expire(self.PREFIX + key, self._ttl)
                members, _ = await pipe.execute()
        except RedisError as exc:
            raise _unavailable(exc) from None
        return [m.decode() if isinstance(m, bytes) else str(m) for m in members]

    async def add(self, key: str, names: Sequence[str]) -> list[str]:
        now = time.time()
        # Later names of one call get later scores so tools/list keeps the order they were asked in.
        scores = {name: now + i * 1e-6 for i, name in enumerate(dict.fromkeys(names))}
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                if scores:
                    pipe.zadd(self.PREFIX + key, scores, nx=True)  # nx: an active tool keeps its place
                pipe.expire(self.PREFIX + key, self._ttl)
                await pipe.execute()
        except RedisError as exc:
            raise _unavailable(exc) from None
        return await self.get(key)

    async def close(self) -> None:
        await self._redis.aclose()


def _unavailable(exc: RedisError) -> Unavailable:
    return Unavailable(
        f"the session's active tools live in Redis, which is unreachable ({type(exc).__name__}); "
        "tool_call works without loading"
    )


def open_active_sets(redis_url: str) -> ActiveSets:
    return RedisActiveSets(redis_url) if redis_url else MemoryActiveSets()
