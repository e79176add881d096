"""Views of the scheduler's objects, as agents read them (field names and order are the public contract).
Times are RFC 3339 strings; a time the scheduler has not set is absent."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ScheduleView:
    id: str
    name: str
    cron: str
    timezone: str
    prompt: str
    targets: list[str]
    enabled: bool
    concurrency: str
    missed: str
    created_by: str
    created_at: str | None
    updated_at: str | None
    next_fire_at: str | None  # unset while disabled
    last_fired_at: str | None
    secret_overrides: dict[str, str]
    paused_reason: str = ""  # why Jarvis disabled it: its owner was disabled (decision 0057)


@dataclass(frozen=True)
class RunView:
    id: str
    schedule_id: str
    target: str
    tick: str | None
    trigger: str
    state: str
    idempotency_key: str
    session_id: str
    attempts: int
    error: str
    missed_ticks: int
    first_missed_tick: str | None
    queued_at: str | None
    started_at: str | None
    session_started_at: str | None
    finished_at: str | None


@dataclass(frozen=True)
class ScheduleDetail:
    schedule: ScheduleView | None
    next_fires: list[str]
    recent_runs: list[RunView]


@dataclass(frozen=True)
class ScheduleDeleted:
    schedule_id: str
    queued_runs_skipped: int


@dataclass(frozen=True)
class SchedulerStatus:
    mode: str
    schedules: int
    enabled: int
    runs_by_state: dict[str, int]
    queue_depth: int
    detail: str
    workers: int
    workers_detail: str
