"""Whether a signed-in person may still act (issue 31 item 3): the check every JWT caller passes on every request.

A person's access tokens are checked locally (signature, audience, expiry), so disabling them cannot wait for the
tokens to expire: `jarvis user disable` marks the user record in the registry `disabled` and stamps `not_before`
(the time of the disable), and this check reads that record, shared by every worker and replica, at most once per
`ttl` seconds per person and process. A disabled person is refused; so is a token issued before their
`not_before`, which keeps a re-enabled person's old tokens (and agent credentials) dead. See decision 0057.

A subject with no user record is not refused here: every sign-in records its person before a token is issued, and
disabling needs the record, so there is nothing to enforce for one without it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from jarvis.aggregator.gateways.scheduler import ScheduleChanges
from jarvis.common.errors import JarvisError, Unauthenticated

log = logging.getLogger(__name__)
USER_PREFIX = "user:"  # a signed-in person's sessions and rate limits key on this and their subject


class UserRecords(Protocol):
    """The registry's user records (OAuthStateGateway's `get`, or a test's own)."""

    async def get(self, kind: str, key: str) -> Any: ...


@dataclass(frozen=True)
class Standing:
    disabled: bool
    not_before: int  # unix seconds; a token issued before it is refused (0: none)

    def refusal(self, issued_at: int) -> str | None:
        """Why a token issued at `issued_at` no longer speaks for this person; None when it does."""
        if self.disabled:
            return "this account is disabled; ask an admin (jarvis user enable)"
        if issued_at < self.not_before:
            return "this token was issued before the account was disabled; sign in again"
        return None


def standing_of(body: dict[str, Any] | None) -> Standing:
    if body is None:
        return Standing(disabled=False, not_before=0)
    return Standing(bool(body.get("disabled")), int(body.get("not_before") or 0))


class StandingCache:
    """Each person's standing, read from the registry at most once per `ttl` seconds (per process)."""

    def __init__(self, users: UserRecords, ttl: float = 5.0, max_entries: int = 10_000) -> None:
        self.users = users
        self.ttl = ttl
        self.max_entries = max_entries
        self._cache: dict[str, tuple[float, Standing]] = {}

    async def standing(self, subject: str, *, fresh: bool = False) -> Standing:
        now = time.monotonic()
        hit = self._cache.get(subject)
        if hit is not None and hit[0] > now and not fresh:
            return hit[1]
        stored = await self.users.get("user", subject)
        found = standing_of(stored.body if stored is not None else None)
        if len(self._cache) >= self.max_entries:
            self._cache.clear()  # a burst of distinct people: start over rather than grow without bound
        self._cache[subject] = (now + self.ttl, found)
        return found

    async def check(self, subject: str, issued_at: int) -> None:
        """Unauthenticated(why) when `subject`'s token issued at `issued_at` no longer speaks for them."""
        why = (await self.standing(subject)).refusal(issued_at)
        if why is not None:
            raise Unauthenticated(why)


async def end_sessions_of_the_disabled(
    owners: Callable[[], Mapping[str, str]], standing: StandingCache, end: Callable[[set[str]], Awaitable[int]]
) -> int:
    """End every MCP session whose owner is a person now disabled; how many ended.

    `owners` maps session ids to the token ids that opened them (a person's is `user:<subject>`)."""
    by_person: dict[str, set[str]] = {}
    for session_id, owner in owners().items():
        if owner.startswith(USER_PREFIX):
            by_person.setdefault(owner.removeprefix(USER_PREFIX), set()).add(session_id)
    doomed: set[str] = set()
    for subject, session_ids in by_person.items():
        if (await standing.standing(subject)).disabled:
            doomed |= session_ids
    if not doomed:
        return 0
    ended = await end(doomed)
    log.info("ended the MCP sessions of disabled people", extra={"sessions": ended})
    return ended


async def sweep(
    owners: Callable[[], Mapping[str, str]],
    standing: StandingCache,
    end: Callable[[set[str]], Awaitable[int]],
    interval: float,
) -> None:
    """Forever: every `interval` seconds, end the sessions of people disabled meanwhile (on any replica)."""
    while True:
        await asyncio.sleep(interval)
        try:
            await end_sessions_of_the_disabled(owners, standing, end)
        except JarvisError:
            log.warning("could not read people's standing from the registry; sessions are checked again soon")


class Schedules(Protocol):
    """The scheduler as the pausing job needs it (gateways/scheduler.py)."""

    async def list_schedules(self, target: str = "") -> list[Any]: ...

    async def update_schedule(self, schedule_id: str, changes: Any) -> Any: ...


def schedule_owner(created_by: str) -> str:
    """The subject of the person who created a schedule ("alice@example.com (user:alice)"), or "" for a token."""
    inside = created_by.rpartition(" (")[2].removesuffix(")") if created_by.endswith(")") else created_by
    return inside.removeprefix(USER_PREFIX) if inside.startswith(USER_PREFIX) else ""


async def pause_schedules_of_the_disabled(users: Any, scheduler: Schedules) -> list[str]:
    """Disable every enabled schedule whose owner is a disabled person, saying so in its `paused_reason`; the ids.

    It stays disabled when the person is enabled again: someone who may enables it (which clears the reason)."""
    disabled = {r.key: r.body for r in await users.list("user") if r.body.get("disabled")}
    if not disabled:
        return []
    paused = []
    for schedule in await scheduler.list_schedules():
        owner = schedule_owner(schedule.created_by)
        if not schedule.enabled or owner not in disabled:
            continue
        who = disabled[owner].get("email") or owner
        reason = (
            f"its owner {who} is disabled (jarvis user disable), so it no longer fires; once they are enabled again, "
            "enable it (schedule action=update enabled=true) or delete it"
        )
        await scheduler.update_schedule(schedule.id, ScheduleChanges(enabled=False, paused_reason=reason))
        paused.append(schedule.id)
    if paused:
        log.info("paused the schedules of disabled people", extra={"schedules": paused})
    return paused


async def keep_pausing(users: Any, scheduler: Schedules, interval: float) -> None:
    """Forever: every `interval` seconds, pause the schedules of people disabled meanwhile."""
    while True:
        await asyncio.sleep(interval)
        try:
            await pause_schedules_of_the_disabled(users, scheduler)
        except JarvisError:
            log.warning("could not pause the schedules of disabled people; trying again soon", exc_info=True)
