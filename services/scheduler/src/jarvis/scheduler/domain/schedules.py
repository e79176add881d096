"""Schedule use cases: create, list, get, update, delete and trigger, each validated before any write."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from sqlalchemy import func, select, update

from jarvis.common.errors import InvalidArgument
from jarvis.common.sql.database import Database
from jarvis.common.sql.types import utcnow
from jarvis.scheduler.domain.cron import Cron
from jarvis.scheduler.domain.models import (
    CONCURRENCY,
    MISSED_POLICIES,
    PENDING,
    QUEUED,
    RUN_STATES,
    SKIPPED,
    TRIGGER_MANUAL,
    NewSchedule,
    Run,
    Schedule,
    ScheduleChanges,
    ScheduleDetail,
    Status,
    idempotency_key,
)
from jarvis.scheduler.domain.ports import Dispatcher, RuntimePort
from jarvis.scheduler.domain.rows import new_id, schedule_row, to_run, to_schedule
from jarvis.scheduler.storage.models import RunRow, ScheduleRow

PROMPT_MAX_CHARS = 100_000
MAX_OVERRIDES = 20
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
TARGETS_MAX = 100
NAME_MAX = 100
NEXT_FIRES_SHOWN = 5
RECENT_RUNS_SHOWN = 10
RUNS_PAGE_MAX = 500


class Schedules:
    """The API's use cases. Writes are single transactions: a schedule is never half-updated."""

    def __init__(
        self,
        db: Database,
        runtime: RuntimePort,
        dispatcher: Dispatcher,
        min_interval_seconds: int,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._db = db
        self._runtime = runtime
        self._dispatcher = dispatcher
        self._min_interval = min_interval_seconds
        self._now = clock

    def create(self, new: NewSchedule) -> ScheduleDetail:
        cron = Cron.parse(new.cron, new.timezone, self._min_interval)
        prompt = _prompt(new.prompt)
        targets = self._targets(new.targets)
        overrides = _overrides(new.secret_overrides)
        now = self._now()
        row = ScheduleRow(
            id=new_id("sch"),
            name=_name(new.name),
            cron=cron.expression,
            timezone=cron.timezone,
            prompt=prompt,
            targets=targets,
            secret_overrides=overrides,
            enabled=new.enabled,
            concurrency=_choice("concurrency", new.concurrency, CONCURRENCY),
            missed=_choice("missed", new.missed, MISSED_POLICIES),
            created_by=new.created_by[:200],
            created_at=now,
            updated_at=now,
            next_fire_at=cron.next_after(now) if new.enabled else None,
        )
        with self._db.write() as session:
            session.add(row)
        return self._detail(to_schedule(row), [])

    def all(self, target: str = "") -> list[Schedule]:
        with self._db.read() as session:
            rows = session.scalars(select(ScheduleRow).order_by(ScheduleRow.created_at, ScheduleRow.id)).all()
            schedules = [to_schedule(r) for r in rows]
        return [s for s in schedules if not target or target in s.targets]

    def get(self, schedule_id: str) -> ScheduleDetail:
        with self._db.read() as session:
            schedule = to_schedule(schedule_row(session, schedule_id))
            runs = session.scalars(
                select(RunRow)
                .where(RunRow.schedule_id == schedule.id)
                .order_by(RunRow.queued_at.desc(), RunRow.id)
                .limit(RECENT_RUNS_SHOWN)
            ).all()
            recent = [to_run(r) for r in runs]
        return self._detail(schedule, recent)

    def update(self, schedule_id: str, changes: ScheduleChanges) -> ScheduleDetail:
        # Everything is validated (including the runtime's view of targets) before the transaction opens.
        targets = self._targets(changes.targets) if changes.targets is not None else None
        prompt = _prompt(changes.prompt) if changes.prompt is not None else None
        overrides = _overrides(changes.secret_overrides) if changes.secret_overrides is not None else None
        with self._db.write() as session:
            row = schedule_row(session, schedule_id)
            cron = Cron.parse(
                changes.cron if changes.cron is not None else row.cron,
                changes.timezone if changes.timezone is not None else row.timezone,
                self._min_interval,
            )
            timing_changed = (cron.expression, cron.timezone) != (row.cron, row.timezone)
            row.cron, row.timezone = cron.expression, cron.timezone
            if changes.name is not None:
                row.name = _name(changes.name)
            if prompt is not None:
                row.prompt = prompt
            if targets is not None:
                row.targets = targets
            if overrides is not None:
                row.secret_overrides = overrides
            if changes.concurrency is not None:
                row.concurrency = _choice("concurrency", changes.concurrency, CONCURRENCY)
            if changes.missed is not None:
                row.missed = _choice("missed", changes.missed, MISSED_POLICIES)
            enabling = changes.enabled is True and not row.enabled
            if changes.enabled is not None:
                row.enabled = changes.enabled
            if changes.paused_reason is not None:
                row.paused_reason = changes.paused_reason[:500]
            elif changes.enabled is not None:
                row.paused_reason = ""  # enabled or disabled by hand: no longer paused by Jarvis
            now = self._now()
            if not row.enabled:
                row.next_fire_at = None
            elif timing_changed or enabling or row.next_fire_at is None:
                # Re-enabling starts from now: fires while disabled were wanted off, not missed.
                row.next_fire_at = cron.next_after(now)
            row.updated_at = now
            schedule_id = row.id
        return self.get(schedule_id)

    def delete(self, schedule_id: str) -> int:
        """Delete the schedule; its runs stay as history, those not started yet are skipped. How many."""
        with self._db.write() as session:
            row = schedule_row(session, schedule_id)
            session.delete(row)
            result = session.execute(
                update(RunRow)
                .where(RunRow.schedule_id == row.id, RunRow.state == QUEUED)
                .values(
                    state=SKIPPED, error="the schedule was deleted before this run started", finished_at=self._now()
                )
            )
            return int(getattr(result, "rowcount", 0) or 0)

    def trigger(self, schedule_id: str) -> list[Run]:
        """Run now on every target, whatever the cron and the enabled flag say."""
        now = self._now()
        with self._db.write() as session:
            row = schedule_row(session, schedule_id)
            runs = [
                RunRow(
                    id=new_id("run"),
                    schedule_id=row.id,
                    target=target,
                    tick=now,
                    trigger=TRIGGER_MANUAL,
                    state=QUEUED,
                    idempotency_key=idempotency_key(row.id, target, now),
                    prompt=row.prompt,
                    secret_overrides=dict(row.secret_overrides or {}),
                    concurrency=row.concurrency,
                    session_id="",
                    attempts=0,
                    error="",
                    missed_ticks=0,
                    queued_at=now,
                    dispatched_at=now,
                )
                for target in row.targets
            ]
            session.add_all(runs)
            created = [to_run(r) for r in runs]
        unsent = self._dispatcher.dispatch([r.id for r in created])
        # Not `queued` while it is not on the queue: say so, and why.
        return [replace(r, state=PENDING, error=unsent[r.id]) if r.id in unsent else r for r in created]

    def runs(self, schedule_id: str = "", state: str = "", limit: int = 0) -> list[Run]:
        if state and state not in RUN_STATES:
            raise InvalidArgument(f"state '{state}' is unknown; use one of {', '.join(RUN_STATES)}")
        limit = min(limit or 50, RUNS_PAGE_MAX)
        with self._db.read() as session:
            query = select(RunRow)
            if schedule_id:
                query = query.where(RunRow.schedule_id == schedule_id)
            if state:
                query = query.where(RunRow.state == state)
            rows = session.scalars(query.order_by(RunRow.queued_at.desc(), RunRow.id).limit(limit)).all()
            return [to_run(r) for r in rows]

    def status(self, mode: str) -> Status:
        with self._db.read() as session:
            total = session.scalar(select(func.count()).select_from(ScheduleRow)) or 0
            enabled = session.scalar(select(func.count()).select_from(ScheduleRow).where(ScheduleRow.enabled)) or 0
            by_state = dict(session.execute(select(RunRow.state, func.count()).group_by(RunRow.state)).tuples().all())
        return Status(
            mode=mode,
            schedules=total,
            enabled=enabled,
            runs_by_state={k: int(v) for k, v in by_state.items()},
            queue_depth=self._dispatcher.queue_depth(),
        )

    def _detail(self, schedule: Schedule, recent: list[Run]) -> ScheduleDetail:
        fires: list[datetime] = []
        if schedule.enabled:
            fires = Cron(schedule.cron, schedule.timezone).next_fires(self._now(), NEXT_FIRES_SHOWN)
        return ScheduleDetail(schedule=schedule, next_fires=fires, recent_runs=recent)

    def _targets(self, targets: list[str]) -> list[str]:
        cleaned = list(dict.fromkeys(t.strip() for t in targets if t.strip()))
        if not cleaned:
            raise InvalidArgument("targets is empty; give the ids of the projects to run on (`project action=list`)")
        if len(cleaned) > TARGETS_MAX:
            raise InvalidArgument(f"{len(cleaned)} targets; a schedule runs on at most {TARGETS_MAX} projects")
        missing = self._runtime.missing_projects(cleaned)
        if missing:
            raise InvalidArgument(
                f"unknown target project(s): {', '.join(missing)}; `project action=list` shows "
                "the ids; nothing was changed"
            )
        return cleaned


def _overrides(overrides: dict[str, str]) -> dict[str, str]:
    """Variable -> secret name pairs; both must be environment variable names (the runtime checks the secret)."""
    if len(overrides) > MAX_OVERRIDES:
        raise InvalidArgument(f"secret_overrides has {len(overrides)} entries; the limit is {MAX_OVERRIDES}")
    for variable, secret in overrides.items():
        for what, name in (("variable", variable), ("secret name", secret)):
            if not _ENV_NAME.fullmatch(name or ""):
                raise InvalidArgument(
                    f"secret_overrides: invalid {what} '{(name or '')[:60]}'; use environment "
                    'variable names, e.g. {"ANTHROPIC_API_KEY": "NIGHTLY_ANTHROPIC_KEY"}'
                )
    return dict(overrides)


def _prompt(prompt: str) -> str:
    if not prompt.strip():
        raise InvalidArgument("prompt is empty; give the message the agent receives on each run")
    if len(prompt) > PROMPT_MAX_CHARS:
        raise InvalidArgument(f"prompt has {len(prompt)} characters; the limit is {PROMPT_MAX_CHARS}")
    return prompt


def _name(name: str) -> str:
    name = name.strip()
    if len(name) > NAME_MAX:
        raise InvalidArgument(f"name has {len(name)} characters; the limit is {NAME_MAX}")
    return name


def _choice(field: str, value: str, allowed: tuple[str, ...]) -> str:
    value = value.strip() or allowed[0]
    if value not in allowed:
        raise InvalidArgument(f"{field} '{value}' is unknown; use one of {', '.join(allowed)}")
    return value
