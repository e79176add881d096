"""Jarvis as a caching client of its servers: a result a 2026-07-28 server marks fresh (`ttlMs`) is reused.

Servers put caching hints on `prompts/list`, `resources/list`, `resources/templates/list` and `resources/read`
results (SEP-2549). A profile that merges several servers asks each of them on every listing; reusing a page the
server said stays fresh spares the server and the caller the round trip. The key is what the specification says
makes a response: the method and every parameter that affects it (the cursor, the URI), plus the era the request
went out in. Tools are not cached here: the host keeps each server's tools itself and reloads them on change.

`cacheScope` says whose the result is. Jarvis reaches a shared server on one connection with one credential, so
every request it sends there is one authorization context, and a `private` result is reused only in that context:
the key carries the context (`""` for the shared connection), and a per-person connection would carry its person.

Reuse ends early when the server says its lists changed (any of them, or a restart: every result of that server
is dropped) or that a resource was updated (that URI's reads). Results of a multi-round retry (`inputResponses`,
`requestState`) and interim input-required results are never stored, as the specification requires. A served
result says the time it has left (`ttlMs` minus its age), so the caller's own cache expires with Jarvis's.
"""

from __future__ import annotations

import copy
import json
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

CACHEABLE = frozenset({"prompts/list", "resources/list", "resources/templates/list", "resources/read"})
_RETRY_PARAMS = ("inputResponses", "requestState")
MAX_BYTES = 16 * 1024 * 1024  # all stored results together, as JSON


@dataclass(frozen=True)
class _Key:
    server: str
    method: str
    params: str  # the parameters as canonical JSON, `_meta` left out (it carries the envelope, not the question)
    era: str
    context: str


@dataclass
class _Entry:
    result: dict[str, Any]
    expires: float
    size: int
    uri: str | None  # a read's URI, for resources/updated


class ResultCache:
    def __init__(self, max_bytes: int = MAX_BYTES, clock: Callable[[], float] = time.monotonic) -> None:
        self._entries: OrderedDict[_Key, _Entry] = OrderedDict()
        self._bytes = 0
        self._max_bytes = max_bytes
        self._clock = clock
        self.served: dict[str, int] = dict.fromkeys(sorted(CACHEABLE), 0)  # results answered from here, by method

    @staticmethod
    def key(server: str, method: str, params: dict[str, Any] | None, era: str | None, context: str = "") -> _Key | None:
        """The key of a request whose answer may be reused; None for one whose may not."""
        params = params or {}
        if method not in CACHEABLE or any(p in params for p in _RETRY_PARAMS):
            return None
        question = {k: v for k, v in params.items() if k != "_meta"}
        return _Key(server, method, json.dumps(question, sort_keys=True, default=str), era or "", context)

    def get(self, key: _Key) -> dict[str, Any] | None:
        """A fresh stored result (a copy the caller may change), with the milliseconds it has left as its `ttlMs`."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        left = entry.expires - self._clock()
        if left <= 0:
            self._drop(key)
            return None
        self._entries.move_to_end(key)
        self.served[key.method] += 1
        return {**copy.deepcopy(entry.result), "ttlMs": int(left * 1000)}

    def put(self, key: _Key, result: dict[str, Any]) -> None:
        """Store `result` if its server said it stays fresh; the least recently used go when the store is full."""
        ttl = result.get("ttlMs")
        if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl <= 0:
            return
        if result.get("resultType", "complete") != "complete":
            return
        size = len(json.dumps(result, default=str))
        if size > self._max_bytes // 4:  # one result may not push out everything else
            return
        self._drop(key)
        uri = json.loads(key.params).get("uri") if key.method == "resources/read" else None
        self._entries[key] = _Entry(copy.deepcopy(result), self._clock() + ttl / 1000, size, uri)
        self._bytes += size
        while self._bytes > self._max_bytes:
            self._drop(next(iter(self._entries)))

    async def through(self, key: _Key | None, fetch: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        """The stored result for `key` while it is fresh; else `fetch()`'s, stored if its server said it stays fresh.
        A None key (a request whose answer may not be reused) always fetches."""
        stored = self.get(key) if key is not None else None
        if stored is not None:
            return stored
        result = await fetch()
        if key is not None:
            self.put(key, result)
        return result

    def forget_server(self, server: str) -> None:
        """Every stored result of `server`: its lists changed, or it was restarted or removed."""
        for key in [k for k in self._entries if k.server == server]:
            self._drop(key)

    def forget_reads(self, server: str, uri: str) -> None:
        """`server` said the resource at `uri` was updated."""
        for key in [k for k, e in self._entries.items() if k.server == server and e.uri == uri]:
            self._drop(key)

    def __len__(self) -> int:
        return len(self._entries)

    def _drop(self, key: _Key) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= entry.size
