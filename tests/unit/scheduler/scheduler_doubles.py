"""Stand-ins for the scheduler domain's ports in unit tests: a clock to drive, a recording dispatcher."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from jarvis.common.sql.database import Database
from jarvis.scheduler.domain.beat import Beat, BeatPolicy
from jarvis.scheduler.domain.models import SessionOutcome

START = datetime(2025, 1, 6, 10, 2, tzinfo=UTC)  # a Monday, 10:02 UTC
GRACE_SECONDS = 60


class Clock:
    """A clock the test moves by hand; every beat and use case built with it reads the same instant."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def set(self, now: datetime) -> None:
        self.now = now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


class RecordingDispatcher:
    """Records what the domain hands to workers instead of running anything."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.dispatched: list[str] = []
        self.later: list[tuple[str, datetime]] = []
        self.unreachable = ""  # set: nothing is sent, every run comes back with this reason

    def dispatch(self, run_ids: list[str]) -> dict[str, str]:
        if self.unreachable:
            return dict.fromkeys(run_ids, self.unreachable)
        with self._lock:
            self.dispatched.extend(run_ids)
        return {}

    def dispatch_later(self, run_id: str, at: datetime) -> None:
        with self._lock:
            self.later.append((run_id, at))

    def queue_depth(self) -> int:
        return len(self.dispatched)


class RecordingObserver:
    def __init__(self) -> None:
        self.lags: list[float] = []
        self.finished: list[str] = []

    def run_finished(self, state: str) -> None:
        self.finished.append(state)

    def session_started(self, latency_seconds: float) -> None:
        pass

    def fired(self, lag_seconds: float) -> None:
        self.lags.append(lag_seconds)


class KnownProjects:
    """The runtime as far as schedule validation needs it: every project exists. Runs never reach it."""

    def missing_projects(self, project_ids: Iterable[str]) -> list[str]:
        return []

    def spawn(
        self,
        project_id: str,
        prompt: str,
        idempotency_key: str,
        secret_overrides: dict[str, str],
        session_id: str = "",
        agent_env: dict[str, str] | None = None,
    ) -> str:
        raise AssertionError("unit tests never spawn sessions")

    def wait_turn(
        self, project_id: str, session_id: str, cursor: int, wait_seconds: float
    ) -> tuple[int, SessionOutcome | None]:
        raise AssertionError("unit tests never follow sessions")

    def end(self, project_id: str, session_id: str, force: bool) -> None:
        raise AssertionError("unit tests never end sessions")


def make_beat(db: Database, dispatcher: RecordingDispatcher, clock: Clock) -> Beat:
    """A beat as a deployment builds it, on `clock`: fires later than GRACE_SECONDS count as missed."""
    return Beat(
        db,
        dispatcher,
        RecordingObserver(),
        BeatPolicy(misfire_grace_seconds=GRACE_SECONDS, requeue_after_seconds=300, lease_seconds=15),
        clock=clock,
    )
