"""What the scheduler's domain needs from outside: the runtime, a way to queue runs, and metrics."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from jarvis.scheduler.domain.models import SessionOutcome


@dataclass(frozen=True)
class OwnerStanding:
    disabled: bool
    email: str


class OwnersPort(Protocol):
    """The signed-in people schedules act for (the registry's sign-in records; decision 0057)."""

    def standing(self, subject: str) -> OwnerStanding | None:
        """Whether the person is disabled, and their email; None when Jarvis has no record of them."""

    def credential(self, subject: str, project_id: str, session_id: str, run_id: str, ttl_seconds: int) -> str:
        """A run's credential for the person, bound to the project and session, good for `ttl_seconds`."""

    def revoke(self, run_id: str) -> None:
        """Revoke every credential made for the run (its session is over)."""


class RuntimePort(Protocol):
    """The runtime service, seen from a schedule. Errors are domain errors (Unavailable when unreachable)."""

    def missing_projects(self, project_ids: Iterable[str]) -> list[str]:
        """Those of `project_ids` the runtime does not know."""

    def spawn(
        self,
        project_id: str,
        prompt: str,
        idempotency_key: str,
        secret_overrides: dict[str, str],
        session_id: str = "",
        agent_env: dict[str, str] | None = None,
    ) -> str:
        """Start (or, for a known key, find) the session, with the run's secret overrides, as `session_id` when
        given, with Jarvis's `agent_env` (the owner's credential); its id."""

    def wait_turn(
        self, project_id: str, session_id: str, cursor: int, wait_seconds: float
    ) -> tuple[int, SessionOutcome | None]:
        """Events after `cursor` for up to `wait_seconds`: the new cursor, and the outcome once the turn ended."""

    def end(self, project_id: str, session_id: str, force: bool) -> None:
        """End the session (closing its input; `force` skips the grace period)."""


class Dispatcher(Protocol):
    """Hands runs to whatever executes them: Celery workers, or the embedded thread pool."""

    def dispatch(self, run_ids: list[str]) -> dict[str, str]:
        """Send the runs; those it could not send, each with why (they stay queued in SQL for beat's sweep)."""

    def dispatch_later(self, run_id: str, at: datetime) -> None: ...

    def queue_depth(self) -> int:
        """Runs waiting for a worker; -1 when it cannot be known."""


class Observer(Protocol):
    """Where the domain reports what ops dashboards chart (Prometheus in practice)."""

    def run_finished(self, state: str) -> None: ...

    def session_started(self, latency_seconds: float) -> None: ...

    def fired(self, lag_seconds: float) -> None: ...
