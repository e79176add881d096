"""ORM models of the scheduler's tables (prefixed `scheduler_`). Migrations mirror them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from jarvis.common.sql.base import TYPE_ANNOTATION_MAP, new_metadata
from jarvis.common.sql.types import utcnow


class Base(DeclarativeBase):
    metadata = new_metadata()
    type_annotation_map = TYPE_ANNOTATION_MAP


class ScheduleRow(Base):
    """A cron schedule of one prompt over target projects; `next_fire_at` is what beat polls."""

    __tablename__ = "scheduler_schedules"
    __table_args__ = (Index("ix_scheduler_schedules_due", "enabled", "next_fire_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(100), default="")
    cron: Mapped[str] = mapped_column(String(200))
    timezone: Mapped[str] = mapped_column(String(64))
    prompt: Mapped[str] = mapped_column(Text)
    targets: Mapped[list[str]] = mapped_column()
    # Environment variable -> the name of a project secret the run's session gets instead (names only:
    # the values live encrypted in the runtime).
    secret_overrides: Mapped[dict[str, Any]] = mapped_column(default=dict)
    enabled: Mapped[bool] = mapped_column(default=True)
    concurrency: Mapped[str] = mapped_column(String(16))
    missed: Mapped[str] = mapped_column(String(16))
    created_by: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    next_fire_at: Mapped[datetime | None] = mapped_column()
    last_fired_at: Mapped[datetime | None] = mapped_column()
    # Why Jarvis disabled it (its owner was disabled, decision 0057); "" otherwise, and once enabled again.
    paused_reason: Mapped[str] = mapped_column(String(500), default="")


class RunRow(Base):
    """One fire of a schedule on one target: the session it spawned and how it ended.

    Runs outlive their schedule (history); the prompt and policy are copied at fire time so an
    edit never changes a run already queued.
    """

    __tablename__ = "scheduler_runs"
    __table_args__ = (
        UniqueConstraint("idempotency_key", name="uq_scheduler_runs_idempotency_key"),
        Index("ix_scheduler_runs_schedule_target_state", "schedule_id", "target", "state"),
        Index("ix_scheduler_runs_state_queued_at", "state", "queued_at"),
        # A schedule's recent runs, newest first, without sorting its whole history.
        Index("ix_scheduler_runs_schedule_queued_at", "schedule_id", "queued_at"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    schedule_id: Mapped[str] = mapped_column(String(32))
    target: Mapped[str] = mapped_column(String(64))
    tick: Mapped[datetime] = mapped_column()
    trigger: Mapped[str] = mapped_column(String(16))
    state: Mapped[str] = mapped_column(String(16))
    idempotency_key: Mapped[str] = mapped_column(String(200))
    prompt: Mapped[str] = mapped_column(Text)
    secret_overrides: Mapped[dict[str, Any]] = mapped_column(default=dict)
    concurrency: Mapped[str] = mapped_column(String(16))
    session_id: Mapped[str] = mapped_column(String(64), default="")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str] = mapped_column(Text, default="")
    missed_ticks: Mapped[int] = mapped_column(Integer, default=0)
    first_missed_tick: Mapped[datetime | None] = mapped_column()
    queued_at: Mapped[datetime] = mapped_column(default=utcnow)
    dispatched_at: Mapped[datetime | None] = mapped_column()
    started_at: Mapped[datetime | None] = mapped_column()
    session_started_at: Mapped[datetime | None] = mapped_column()
    heartbeat_at: Mapped[datetime | None] = mapped_column()
    retry_at: Mapped[datetime | None] = mapped_column()
    finished_at: Mapped[datetime | None] = mapped_column()
