"""Executing one run: claim it, spawn the session through the runtime, follow it to the end.

The same code runs in Celery workers and in the embedded thread pool. Every step is safe to
repeat: a redelivered or re-sent run either finds its work done, waits for a live worker's
result, or takes over a dead worker's run (the runtime's idempotency key means the session is
never spawned twice).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from opentelemetry.trace import SpanKind
from sqlalchemy import select, update

from jarvis.common import tracing
from jarvis.common.errors import DeadlineExceeded, JarvisError, NotFound, Unavailable
from jarvis.common.sql.database import Database
from jarvis.common.sql.types import utcnow
from jarvis.scheduler.domain.models import (
    CONCURRENCY_SKIP,
    FAILED,
    FINISHED,
    QUEUED,
    RUNNING,
    SKIPPED,
    SUCCEEDED,
    SessionOutcome,
)
from jarvis.scheduler.domain.ports import Observer, OwnersPort, RuntimePort
from jarvis.scheduler.storage.models import RunRow, ScheduleRow

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunPolicy:
    run_timeout_seconds: float
    heartbeat_seconds: float
    lease_seconds: float
    retry_max: int
    retry_base_seconds: float
    retry_cap_seconds: float
    queue_poll_seconds: float


@dataclass(frozen=True)
class Done:
    state: str


@dataclass(frozen=True)
class RetryAt:
    """Not finished: execute again at `at` (the run's turn has not come, or the runtime was unreachable)."""

    at: datetime


Outcome = Done | RetryAt
USER_PREFIX = "user:"


class OwnerDisabled(Exception):
    """The schedule's owner, a signed-in person, is disabled: its runs do not start (decision 0057)."""


def schedule_owner(created_by: str) -> str:
    """The subject of the signed-in person who created a schedule ("alice@example.com (user:alice)"); "" else."""
    inside = created_by.rpartition(" (")[2].removesuffix(")") if created_by.endswith(")") else created_by
    return inside.removeprefix(USER_PREFIX) if inside.startswith(USER_PREFIX) else ""


TRANSIENT = (Unavailable, DeadlineExceeded)


def run_span(run_id: str, fields: Mapping[str, Any]) -> AbstractContextManager[None]:
    """One delivery of a run (a worker's, or the embedded pool's), in the trace of what queued it, as the W3C
    `fields` its task carried name it: a schedule's fire, a trigger (decision 0066)."""
    return tracing.continued("scheduler run", fields, SpanKind.CONSUMER, {"jarvis.run.id": run_id})


class RunExecutor:
    def __init__(
        self,
        db: Database,
        runtime: RuntimePort,
        observer: Observer,
        policy: RunPolicy,
        clock: Callable[[], datetime] = utcnow,
        owners: OwnersPort | None = None,
    ) -> None:
        self._db = db
        self._owners = owners  # None: no registry configured, runs act for no one (as before decision 0057)
        self._runtime = runtime
        self._observer = observer
        self._policy = policy
        self._now = clock

    def execute(self, run_id: str) -> Outcome:
        claim = self._claim(run_id)
        if not isinstance(claim, RunRow):
            return claim
        try:
            session_id = self._spawn(claim)
        except TRANSIENT as exc:
            return self._transient(claim, exc)
        except NotFound as exc:
            return self._finish(
                claim.id,
                FAILED,
                f"target project '{claim.target}' no longer exists ({exc.message}); "
                "remove it from the schedule's targets",
            )
        except OwnerDisabled as exc:
            return self._finish(claim.id, FAILED, str(exc))
        except JarvisError as exc:
            return self._finish(claim.id, FAILED, f"the runtime refused the session: {exc.message}")
        try:
            outcome = self._follow(claim, session_id)
        except TRANSIENT as exc:
            # The session runs on; the run stays ours until the lease lapses, then beat re-sends it.
            log.warning("lost sight of a run's session", extra={"run_id": claim.id, "reason": str(exc)})
            return RetryAt(self._now() + timedelta(seconds=self._policy.lease_seconds))
        self._revoke_quietly(claim.id)
        return self._finish(claim.id, SUCCEEDED if outcome.ok else FAILED, "" if outcome.ok else outcome.detail)

    def _revoke_quietly(self, run_id: str) -> None:
        """The run's session is over: so is its credential for the schedule's owner (else it expires by itself)."""
        if self._owners is None:
            return
        try:
            self._owners.revoke(run_id)
        except JarvisError as exc:
            log.info("run credential left to expire", extra={"run_id": run_id, "reason": exc.message})

    def _claim(self, run_id: str) -> RunRow | Outcome:
        """The run, now ours to execute; or why not (finished, taken by a live worker, or not its turn)."""
        now = self._now()
        with self._db.write() as session:
            run = session.get(RunRow, run_id)
            if run is None:
                log.warning("run to execute is unknown", extra={"run_id": run_id})
                return Done("unknown")
            if run.state in FINISHED:
                return Done(run.state)
            if run.retry_at is not None and run.retry_at > now:
                return RetryAt(run.retry_at)
            if (
                run.state == RUNNING
                and run.heartbeat_at is not None
                and (now - run.heartbeat_at).total_seconds() < self._policy.lease_seconds
            ):
                return Done(RUNNING)  # a live worker has it; this delivery is a duplicate
            if run.state == QUEUED:
                # Claims of one schedule's runs queue behind its row lock (PostgreSQL; SQLite writes one at a
                # time anyway), so two workers never both see "nothing running" and both start.
                session.execute(select(ScheduleRow.id).where(ScheduleRow.id == run.schedule_id).with_for_update())
                previous = session.scalars(
                    select(RunRow.id).where(
                        RunRow.schedule_id == run.schedule_id,
                        RunRow.target == run.target,
                        RunRow.state == RUNNING,
                        RunRow.id != run.id,
                    )
                ).first()
                if previous is not None:
                    if run.concurrency == CONCURRENCY_SKIP:
                        self._close(run, SKIPPED, f"the previous run {previous} on this target was still running", now)
                        return Done(SKIPPED)
                    return RetryAt(now + timedelta(seconds=self._policy.queue_poll_seconds))
                run.started_at = now
            run.state = RUNNING
            run.attempts += 1
            run.heartbeat_at = now
            run.retry_at = None
            session.flush()
            session.expunge(run)
            return run

    def _acting_for(self, run: RunRow) -> tuple[str, dict[str, str]]:
        """The session id and agent environment of a run whose schedule a signed-in person owns: a credential for
        them bound to the target (decision 0057); OwnerDisabled when they are disabled; nothing for a token's."""
        if self._owners is None:
            return "", {}
        with self._db.read() as session:
            schedule = session.get(ScheduleRow, run.schedule_id)
        owner = schedule_owner(schedule.created_by if schedule is not None else "")
        if not owner:
            return "", {}
        standing = self._owners.standing(owner)
        if standing is not None and standing.disabled:
            raise OwnerDisabled(
                f"the schedule's owner {standing.email} is disabled (jarvis user disable); the run did not start"
            )
        session_id = "s" + secrets.token_hex(6)  # the runtime's form of a session id
        ttl = int(self._policy.run_timeout_seconds) + 600
        credential = self._owners.credential(owner, run.target, session_id, run.id, ttl)
        return session_id, {"JARVIS_TOKEN": credential}

    def _spawn(self, run: RunRow) -> str:
        chosen, agent_env = self._acting_for(run)
        session_id = self._runtime.spawn(
            run.target,
            run.prompt,
            run.idempotency_key,
            dict(run.secret_overrides or {}),
            session_id=chosen,
            agent_env=agent_env or None,
        )
        now = self._now()
        with self._db.write() as session:
            row = session.get(RunRow, run.id)
            if row is not None and not row.session_id:
                row.session_id = session_id
                row.session_started_at = now
                self._observer.session_started((now - run.tick).total_seconds())
        return session_id

    def _follow(self, run: RunRow, session_id: str) -> SessionOutcome:
        """Wait for the agent's turn on the prompt to end (or the run's time to run out), then end the session."""
        deadline = (run.started_at or self._now()) + timedelta(seconds=self._policy.run_timeout_seconds)
        cursor = 0
        while True:
            remaining = (deadline - self._now()).total_seconds()
            if remaining <= 0:
                self._runtime.end(run.target, session_id, force=True)
                return SessionOutcome(
                    False, f"the run exceeded its {self._policy.run_timeout_seconds:g}s limit; the session was ended"
                )
            cursor, outcome = self._runtime.wait_turn(
                run.target, session_id, cursor, min(self._policy.heartbeat_seconds, remaining)
            )
            if outcome is not None:
                self._end_quietly(run.target, session_id)
                return outcome
            self._heartbeat(run.id)

    def _end_quietly(self, project_id: str, session_id: str) -> None:
        try:
            self._runtime.end(project_id, session_id, force=False)
        except JarvisError as exc:  # already ended, or the runtime went away: the run's outcome stands
            log.info("session not ended by the scheduler", extra={"session_id": session_id, "reason": exc.message})

    def _heartbeat(self, run_id: str) -> None:
        with self._db.write() as session:
            session.execute(
                update(RunRow).where(RunRow.id == run_id, RunRow.state == RUNNING).values(heartbeat_at=self._now())
            )

    def _transient(self, run: RunRow, exc: JarvisError) -> Outcome:
        if run.attempts > self._policy.retry_max:
            return self._finish(
                run.id, FAILED, f"the runtime stayed unreachable after {run.attempts} attempts: {exc.message}"
            )
        delay = min(self._policy.retry_base_seconds * 2 ** (run.attempts - 1), self._policy.retry_cap_seconds)
        at = self._now() + timedelta(seconds=delay)
        with self._db.write() as session:
            session.execute(
                update(RunRow)
                .where(RunRow.id == run.id, RunRow.state == RUNNING)
                .values(
                    state=QUEUED,
                    retry_at=at,
                    heartbeat_at=None,
                    error=f"attempt {run.attempts} of {self._policy.retry_max + 1} failed ({exc.message}); "
                    f"retrying in {delay:g}s",
                )
            )
        return RetryAt(at)

    def _finish(self, run_id: str, state: str, error: str) -> Outcome:
        now = self._now()
        with self._db.write() as session:
            run = session.get(RunRow, run_id)
            if run is None or run.state in FINISHED:
                return Done(run.state if run is not None else "unknown")
            self._close(run, state, error, now)
        return Done(state)

    def _close(self, run: RunRow, state: str, error: str, now: datetime) -> None:
        run.state, run.error, run.finished_at, run.heartbeat_at = state, error, now, None
        self._observer.run_finished(state)
        log.info("run finished", extra={"run_id": run.id, "schedule_id": run.schedule_id, "state": state})
