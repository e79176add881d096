"""Per-token, per-tool rate limits: calls per second (a token bucket) and calls in flight.

Each (token, tool) has its own bucket and in-flight count, so one agent hammering one tool slows
neither its other tools nor anyone else. The key holds no surface: a tool reached through another
route (discovery's `tool_call`, a loaded tool, a profile) is the same tool, with the same bucket and
the same pool of calls in flight. Limits are per aggregator replica. The local user of a
loopback-only Jarvis holds no token and is not limited.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from prometheus_client import Counter

_Key = tuple[str, str]  # token id, tool (as its own surface names it): never the surface it was reached by
_MAX_KEYS = 50_000


@dataclass(frozen=True)
class Limit:
    per_second: float = 0.0  # 0: no rate limit
    burst: int = 0  # calls allowed at once before the rate applies; at least 1 when limited
    concurrent: int = 0  # 0: no cap on calls in flight


@dataclass(frozen=True)
class Refusal:
    reason: str  # "rate" or "concurrency"
    retry_after: float
    message: str

    def detail(self) -> dict[str, object]:
        return {"error": "rate_limited", "reason": self.reason, "retry_after": self.retry_after}


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    def __init__(self, default: Limit, per_tool: Mapping[str, Limit], refused: Counter) -> None:
        self.default = default
        self.per_tool = dict(per_tool)
        self.refused = refused
        self._buckets: dict[_Key, _Bucket] = {}
        self._in_flight: dict[_Key, int] = {}

    def limit_for(self, tool: str) -> Limit:
        return self.per_tool.get(tool, self.default)

    def check(self, token_id: str, surface: str, tool: str) -> Refusal | None:
        """Take one call from the bucket of (token, tool), or say when to retry; `surface` only labels the metric."""
        limit = self.limit_for(tool)
        key = (token_id, tool)
        if limit.concurrent and self._in_flight.get(key, 0) >= limit.concurrent:
            self.refused.labels(surface, "concurrency").inc()
            return Refusal(
                "concurrency",
                1.0,
                f"rate limited: this token already has {limit.concurrent} calls of "
                f"{tool} running, the most it may; retry when one has finished",
            )
        if limit.per_second <= 0:
            return None
        capacity = float(max(1, limit.burst))
        now = time.monotonic()
        bucket = self._buckets.get(key)
        if bucket is None:
            self._prune(now)
            bucket = self._buckets[key] = _Bucket(capacity, now)
        bucket.tokens = min(capacity, bucket.tokens + (now - bucket.updated) * limit.per_second)
        bucket.updated = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return None
        retry_after = math.ceil((1.0 - bucket.tokens) / limit.per_second * 100) / 100
        self.refused.labels(surface, "rate").inc()
        return Refusal(
            "rate",
            retry_after,
            f"rate limited: this token may call {tool} {limit.per_second:g} times "
            f"per second (bursts of {int(capacity)}); retry after {retry_after} s",
        )

    @contextmanager
    def running(self, keys: list[_Key]) -> Iterator[None]:
        """Count these calls in flight while the request is served."""
        for key in keys:
            self._in_flight[key] = self._in_flight.get(key, 0) + 1
        try:
            yield
        finally:
            for key in keys:
                left = self._in_flight[key] - 1
                if left:
                    self._in_flight[key] = left
                else:
                    del self._in_flight[key]

    def _prune(self, now: float) -> None:
        """Forget buckets that have refilled (they hold no state worth keeping) once there are many."""
        if len(self._buckets) < _MAX_KEYS:
            return
        for key, bucket in list(self._buckets.items()):
            limit = self.limit_for(key[1])
            refilled = bucket.tokens + (now - bucket.updated) * limit.per_second
            if limit.per_second <= 0 or refilled >= max(1, limit.burst):
                del self._buckets[key]
