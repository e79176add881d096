"""Rows to domain values, and the look-ups every use case shares."""

from __future__ import annotations

import re
import secrets

from sqlalchemy.orm import Session

from jarvis.common.errors import NotFound
from jarvis.scheduler.domain.models import Run, Schedule
from jarvis.scheduler.storage.models import RunRow, ScheduleRow

_ID = re.compile(r"^(sch|run)_[0-9a-f]{12}$")


def new_id(kind: str) -> str:
    return f"{kind}_{secrets.token_hex(6)}"


def schedule_row(session: Session, schedule_id: str) -> ScheduleRow:
    schedule_id = (schedule_id or "").strip()
    row = session.get(ScheduleRow, schedule_id) if _ID.match(schedule_id) else None
    if row is None:
        raise NotFound(f"schedule '{schedule_id}' not found; `schedule action=list` shows the ids")
    return row


def to_schedule(row: ScheduleRow) -> Schedule:
    return Schedule(
        id=row.id,
        name=row.name,
        cron=row.cron,
        timezone=row.timezone,
        prompt=row.prompt,
        targets=list(row.targets),
        enabled=row.enabled,
        concurrency=row.concurrency,
        missed=row.missed,
        created_by=row.created_by,
        secret_overrides=dict(row.secret_overrides or {}),
        created_at=row.created_at,
        updated_at=row.updated_at,
        next_fire_at=row.next_fire_at,
        last_fired_at=row.last_fired_at,
        paused_reason=row.paused_reason or "",
    )


def to_run(row: RunRow) -> Run:
    return Run(
        id=row.id,
        schedule_id=row.schedule_id,
        target=row.target,
        tick=row.tick,
        trigger=row.trigger,
        state=row.state,
        idempotency_key=row.idempotency_key,
        session_id=row.session_id,
        attempts=row.attempts,
        error=row.error,
        missed_ticks=row.missed_ticks,
        first_missed_tick=row.first_missed_tick,
        queued_at=row.queued_at,
        started_at=row.started_at,
        session_started_at=row.session_started_at,
        finished_at=row.finished_at,
    )
