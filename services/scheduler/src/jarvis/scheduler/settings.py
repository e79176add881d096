"""Settings of the scheduler's processes: API, Celery beat and workers (env prefix JARVIS_SCHEDULER_)."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, model_validator
from pydantic_settings import SettingsConfigDict

from jarvis.common.settings import ProcessSettings


class SchedulerSettings(ProcessSettings):
    """Where schedules live, how runs reach the runtime, and the Celery/Redis knobs.

    With `redis_url` empty the scheduler runs embedded: an in-process timer fires due schedules
    and a thread pool runs them, through the same task code Celery workers run.
    """

    model_config = SettingsConfigDict(env_prefix="JARVIS_SCHEDULER_", extra="ignore", validate_by_name=True)

    data_dir: Path = Field(default=Path("~/.jarvis/scheduler"), description="Holds scheduler.db (SQLite).")
    database_url: str = Field(
        default="",
        validation_alias=AliasChoices("JARVIS_SCHEDULER_DATABASE_URL", "DATABASE_URL"),
        description="SQLAlchemy URL; empty means SQLite at <data_dir>/scheduler.db.",
    )
    listen: str = Field(default="127.0.0.1:0", description="gRPC listen address (host:port or unix:path).")
    runtime_target: str = Field(default="", description="gRPC address of the runtime service that runs sessions.")
    registry_target: str = Field(
        default="",
        description="gRPC address of the registry: runs of a signed-in person's schedule act for them (decision "
        "0057); empty: runs act for no one",
    )
    redis_url: str = Field(
        default="",
        validation_alias=AliasChoices("JARVIS_SCHEDULER_REDIS_URL", "REDIS_URL"),
        description="Celery broker and beat lock; empty: embedded mode (in-process timer, no Redis).",
    )
    queue: str = Field(default="jarvis.scheduler", description="Celery queue of runs.")
    # Cron has minute resolution; an operator may allow a sixth (seconds) field by lowering this.
    min_interval_seconds: int = Field(default=60, ge=1)
    beat_interval_seconds: float = Field(default=1.0, gt=0, le=30)
    beat_lock_ttl_seconds: float = Field(default=15.0, gt=0, description="A dead leader's lock expires after this.")
    misfire_grace_seconds: int = Field(default=60, ge=1, description="A fire later than this counts as missed.")
    run_timeout_seconds: int = Field(default=3600, ge=1, description="A run's session is ended after this.")
    visibility_timeout_seconds: int = Field(
        default=0, ge=0, description="Redis redelivers an unacknowledged run after this; 0: run timeout + 600 s."
    )
    heartbeat_seconds: float = Field(default=5.0, gt=0, description="A running run proves its worker alive this often.")
    sweep_seconds: float = Field(default=15.0, gt=0, description="How often beat looks for lost or orphaned runs.")
    requeue_after_seconds: int = Field(default=300, ge=1, description="A queued run never picked up is sent again.")
    retry_max: int = Field(default=5, ge=0, description="Retries of a run when the runtime is unreachable.")
    retry_base_seconds: float = Field(default=2.0, gt=0)
    retry_cap_seconds: float = Field(default=120.0, gt=0)
    queue_poll_seconds: float = Field(default=10.0, gt=0, description="How often a queued run re-checks its turn.")
    embedded_workers: int = Field(default=4, ge=1, description="Threads running runs in embedded mode.")

    @model_validator(mode="after")
    def _resolve(self) -> SchedulerSettings:
        self.data_dir = self.data_dir.expanduser().resolve()
        if not self.database_url:
            self.database_url = f"sqlite:///{self.data_dir / 'scheduler.db'}"
        self.database_url = self.with_database_password(self.database_url)
        if not self.visibility_timeout_seconds:
            self.visibility_timeout_seconds = self.run_timeout_seconds + 600
        if self.visibility_timeout_seconds <= self.run_timeout_seconds:
            raise ValueError(
                f"visibility_timeout_seconds ({self.visibility_timeout_seconds}) must exceed run_timeout_seconds "
                f"({self.run_timeout_seconds}), or Redis hands a still-running run to a second worker"
            )
        return self

    @property
    def lease_seconds(self) -> float:
        """A running run whose heartbeat is older than this lost its worker; another may take it over."""
        return self.heartbeat_seconds * 3

    @property
    def embedded(self) -> bool:
        return not self.redis_url
