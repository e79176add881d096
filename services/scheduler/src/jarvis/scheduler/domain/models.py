"""What the scheduler's use cases hand out: schedules, runs, and the words for their states."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

QUEUED, RUNNING, SUCCEEDED, FAILED, SKIPPED, MISSED = "queued", "running", "succeeded", "failed", "skipped", "missed"
FINISHED = frozenset({SUCCEEDED, FAILED, SKIPPED, MISSED})
RUN_STATES = (QUEUED, RUNNING, SUCCEEDED, FAILED, SKIPPED, MISSED)
# How a trigger reports a run stored but not on the queue (its queue unreachable): stored as queued,
# it is sent by beat's sweep once the queue is back.
PENDING = "pending"

# What happens to a target's fire while its previous run still goes.
CONCURRENCY_SKIP, CONCURRENCY_QUEUE = "skip", "queue"
CONCURRENCY = (CONCURRENCY_SKIP, CONCURRENCY_QUEUE)
# What happens to fires missed while the scheduler was down.
MISSED_RUN_ONCE, MISSED_RECORD = "run_once", "record"
MISSED_POLICIES = (MISSED_RUN_ONCE, MISSED_RECORD)

TRIGGER_CRON, TRIGGER_MANUAL, TRIGGER_CATCH_UP, TRIGGER_MISSED = "cron", "manual", "catch_up", "missed"


@dataclass(frozen=True)
class Schedule:
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
    secret_overrides: dict[str, str]
    created_at: datetime
    updated_at: datetime
    next_fire_at: datetime | None
    last_fired_at: datetime | None
    paused_reason: str = ""


@dataclass(frozen=True)
class Run:
    id: str
    schedule_id: str
    target: str
    tick: datetime
    trigger: str
    state: str
    idempotency_key: str
    session_id: str
    attempts: int
    error: str
    missed_ticks: int
    first_missed_tick: datetime | None
    queued_at: datetime
    started_at: datetime | None
    session_started_at: datetime | None
    finished_at: datetime | None


@dataclass(frozen=True)
class ScheduleDetail:
    schedule: Schedule
    next_fires: list[datetime]
    recent_runs: list[Run]


@dataclass(frozen=True)
class ScheduleChanges:
    """An update: None leaves a field as it is."""

    name: str | None = None
    cron: str | None = None
    timezone: str | None = None
    prompt: str | None = None
    targets: list[str] | None = None
    enabled: bool | None = None
    concurrency: str | None = None
    missed: str | None = None
    secret_overrides: dict[str, str] | None = None
    paused_reason: str | None = None  # with enabled=False: why Jarvis disabled it


@dataclass(frozen=True)
class NewSchedule:
    cron: str
    prompt: str
    targets: list[str]
    name: str = ""
    timezone: str = ""
    enabled: bool = True
    concurrency: str = CONCURRENCY_SKIP
    missed: str = MISSED_RUN_ONCE
    created_by: str = ""
    secret_overrides: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SessionOutcome:
    """How the agent's turn on a run's prompt ended."""

    ok: bool
    detail: str


@dataclass
class Status:
    mode: str
    schedules: int
    enabled: int
    runs_by_state: dict[str, int] = field(default_factory=dict)
    queue_depth: int = -1
    detail: str = ""


def idempotency_key(schedule_id: str, target: str, tick: datetime) -> str:
    """`schedule_id:target:tick`: the runtime spawns at most one session per key."""
    return f"{schedule_id}:{target}:{tick.strftime('%Y%m%dT%H%M%S.%fZ')}"
