"""A leader lock on Redis: one beat fires schedules, the others wait to take over when its lease lapses."""

from __future__ import annotations

import contextlib
import logging
import secrets

import redis

log = logging.getLogger(__name__)

# Extend only a lease this holder still owns: after a pause past the TTL another beat may hold it.
_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""


class LeaderLock:
    def __init__(self, client: redis.Redis, key: str, ttl_seconds: float) -> None:
        self._client = client
        self._key = key
        self._ttl_ms = int(ttl_seconds * 1000)
        self._token = secrets.token_hex(16)
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)
        self.held = False

    def refresh(self) -> bool:
        """Acquire or extend the lease; whether this holder leads now. Redis down: nobody leads here."""
        try:
            if self.held and self._renew(keys=[self._key], args=[self._token, self._ttl_ms]):
                return True
            self.held = bool(self._client.set(self._key, self._token, nx=True, px=self._ttl_ms))
        except redis.RedisError as exc:
            if self.held:
                log.warning("beat lost its leader lock: Redis unreachable", extra={"reason": str(exc)})
            self.held = False
        return self.held

    def release(self) -> None:
        if self.held:
            with contextlib.suppress(redis.RedisError):  # the lease expires on its own
                self._release(keys=[self._key], args=[self._token])
            self.held = False
