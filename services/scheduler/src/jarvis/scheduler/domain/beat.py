"""Beat: turn due schedules into queued runs, account for missed fires, and re-send lost runs."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from opentelemetry.trace import SpanKind
from sqlalchemy import or_, select, true, update

from jarvis.common import tracing
from jarvis.common.sql.database import Database
from jarvis.common.sql.types import utcnow
from jarvis.scheduler.domain.cron import Cron
from jarvis.scheduler.domain.models import (
    MISSED,
    MISSED_RUN_ONCE,
    QUEUED,
    RUNNING,
    TRIGGER_CATCH_UP,
    TRIGGER_CRON,
    TRIGGER_MISSED,
    idempotency_key,
)
from jarvis.scheduler.domain.ports import Dispatcher, Observer
from jarvis.scheduler.domain.rows import new_id
from jarvis.scheduler.storage.models import RunRow, ScheduleRow

log = logging.getLogger(__name__)

DUE_BATCH = 500
SWEEP_BATCH = 500


@dataclass(frozen=True)
class BeatPolicy:
    misfire_grace_seconds: float
    requeue_after_seconds: float
    lease_seconds: float


class Beat:
    """Everything one beat tick does. Safe with several beats: a schedule's advance is a compare-and-set."""

    def __init__(
        self,
        db: Database,
        dispatcher: Dispatcher,
        observer: Observer,
        policy: BeatPolicy,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._db = db
        self._dispatcher = dispatcher
        self._observer = observer
        self._policy = policy
        self._now = clock

    def fire_due(self) -> list[str]:
        """Queue a run per target of every due schedule and send them; the ids of the runs queued."""
        now = self._now()
        with self._db.read() as session:
            due = session.scalars(
                select(ScheduleRow.id)
                .where(ScheduleRow.enabled, ScheduleRow.next_fire_at <= now)
                .order_by(ScheduleRow.next_fire_at)
                .limit(DUE_BATCH)
            ).all()
        queued: list[str] = []
        for schedule_id in due:
            # Each fire begins a trace, which its runs' tasks carry to the worker, the session and the agent's calls.
            with tracing.span("schedule fire", SpanKind.PRODUCER, {"jarvis.schedule.id": schedule_id}):
                fired = self._fire(schedule_id, now)
                if fired:
                    self._dispatcher.dispatch(fired)
            queued.extend(fired)
        return queued

    def _fire(self, schedule_id: str, now: datetime) -> list[str]:
        with self._db.write() as session:
            row = session.get(ScheduleRow, schedule_id)
            if row is None or not row.enabled or row.next_fire_at is None or row.next_fire_at > now:
                return []  # changed or handled by another beat since the query
            due_at = row.next_fire_at
            cron = Cron(row.cron, row.timezone)
            ticks, total = cron.ticks_between(due_at, now, limit=1)
            latest = ticks[-1]
            advanced = session.execute(
                update(ScheduleRow)
                .where(ScheduleRow.id == row.id, ScheduleRow.next_fire_at == due_at)
                .values(next_fire_at=cron.next_after(now), last_fired_at=now)
            )
            if not getattr(advanced, "rowcount", 0):
                return []
            late = (now - latest).total_seconds() > self._policy.misfire_grace_seconds
            runs = self._runs_for(row, cron, due_at, latest, total, late, now)
            missed_count = total if late else total - 1
            session.add_all(runs)
        self._observer.fired((now - latest).total_seconds())
        if missed_count:
            log.warning(
                "schedule missed fires",
                extra={
                    "schedule_id": schedule_id,
                    "missed": missed_count,
                    "policy": row.missed,
                    "since": due_at.isoformat(),
                },
            )
        return [r.id for r in runs if r.state == QUEUED]

    def _runs_for(
        self, row: ScheduleRow, cron: Cron, first: datetime, latest: datetime, total: int, late: bool, now: datetime
    ) -> list[RunRow]:
        """The runs of one fire covering `total` ticks from `first` to `latest`.

        On time, the latest tick runs. Earlier ticks (and a late latest one) are missed fires: policy
        `run_once` folds them into a single run, `record` writes one missed record per target instead.
        """
        if row.missed == MISSED_RUN_ONCE:
            trigger = TRIGGER_CATCH_UP if late else TRIGGER_CRON
            return [
                self._queued(row, t, latest, trigger, total - 1, first if total > 1 else None, now) for t in row.targets
            ]
        runs: list[RunRow] = []
        if late:
            runs += [self._missed(row, t, first, latest, total, now) for t in row.targets]
        else:
            if total > 1:
                runs += [
                    self._missed(row, t, first, _previous(cron, latest, first), total - 1, now) for t in row.targets
                ]
            runs += [self._queued(row, t, latest, TRIGGER_CRON, 0, None, now) for t in row.targets]
        return runs

    def _queued(
        self,
        row: ScheduleRow,
        target: str,
        tick: datetime,
        trigger: str,
        folded: int,
        first_missed: datetime | None,
        now: datetime,
    ) -> RunRow:
        return RunRow(
            id=new_id("run"),
            schedule_id=row.id,
            target=target,
            tick=tick,
            trigger=trigger,
            state=QUEUED,
            idempotency_key=idempotency_key(row.id, target, tick),
            prompt=row.prompt,
            secret_overrides=dict(row.secret_overrides or {}),
            concurrency=row.concurrency,
            session_id="",
            attempts=0,
            error="",
            missed_ticks=folded,
            first_missed_tick=first_missed,
            queued_at=now,
            dispatched_at=now,
        )

    def _missed(
        self, row: ScheduleRow, target: str, first: datetime, last: datetime, count: int, now: datetime
    ) -> RunRow:
        """One record per target standing for `count` fires from `first` to `last`: bounded, never silent."""
        error = (
            f"{count} fire(s) from {first.isoformat()} to {last.isoformat()} were missed while the scheduler "
            f"was down; policy '{row.missed}' records them without running"
        )
        return RunRow(
            id=new_id("run"),
            schedule_id=row.id,
            target=target,
            tick=last,
            trigger=TRIGGER_MISSED,
            state=MISSED,
            idempotency_key=f"{idempotency_key(row.id, target, last)}:missed",
            prompt=row.prompt,
            secret_overrides=dict(row.secret_overrides or {}),
            concurrency=row.concurrency,
            session_id="",
            attempts=0,
            error=error,
            missed_ticks=count,
            first_missed_tick=first,
            queued_at=now,
            finished_at=now,
        )

    def requeue_stale(self, every_queued: bool = False) -> list[str]:
        """Send again runs whose message was lost (broker restarted) or whose worker died mid-run.

        `every_queued`: also those sent recently, for a process that knows it holds no queue (embedded start),
        and those waiting to retry: the previous process held their retry timers, the executor defers them
        to their retry time.
        """
        now = self._now()
        queued_before = now if every_queued else now - timedelta(seconds=self._policy.requeue_after_seconds)
        alive_after = now - timedelta(seconds=self._policy.lease_seconds)
        retry_due = true() if every_queued else or_(RunRow.retry_at.is_(None), RunRow.retry_at < now)
        with self._db.write() as session:
            stale = session.scalars(
                select(RunRow.id)
                .where(
                    or_(
                        (RunRow.state == QUEUED) & (RunRow.dispatched_at <= queued_before) & retry_due,
                        (RunRow.state == RUNNING) & (RunRow.heartbeat_at < alive_after),
                    )
                )
                .limit(SWEEP_BATCH)
            ).all()
            if stale:
                session.execute(update(RunRow).where(RunRow.id.in_(stale)).values(dispatched_at=now))
        if stale:
            log.info("re-sending runs", extra={"count": len(stale)})
            self._dispatcher.dispatch(list(stale))
        return list(stale)


def _previous(cron: Cron, latest: datetime, first: datetime) -> datetime:
    """The fire before `latest` (at least `first`): where a run of missed on-time fires ends."""
    ticks, _ = cron.ticks_between(first, latest, limit=2)
    return ticks[0] if len(ticks) == 2 else first
