"""The scheduler's composition root: database, runtime client and use cases over one dispatcher."""

from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry

from jarvis.common.sql.database import Database
from jarvis.scheduler.adapters.metrics import SchedulerMetrics
from jarvis.scheduler.adapters.owners_grpc import RegistryOwners
from jarvis.scheduler.adapters.runtime_grpc import GrpcRuntime
from jarvis.scheduler.domain.beat import Beat, BeatPolicy
from jarvis.scheduler.domain.ports import Dispatcher, RuntimePort
from jarvis.scheduler.domain.runs import RunExecutor, RunPolicy
from jarvis.scheduler.domain.schedules import Schedules
from jarvis.scheduler.settings import SchedulerSettings
from jarvis.scheduler.storage.migrate import MIGRATIONS

log = logging.getLogger(__name__)


class Scheduler:
    """What every scheduler process (API, beat, worker, embedded) builds from its settings."""

    def __init__(
        self,
        settings: SchedulerSettings,
        db: Database,
        runtime: RuntimePort,
        dispatcher: Dispatcher,
        metrics: SchedulerMetrics,
        owners: RegistryOwners | None = None,
    ) -> None:
        self.settings = settings
        self.db = db
        self.runtime = runtime
        self.dispatcher = dispatcher
        self.metrics = metrics
        self.schedules = Schedules(db, runtime, dispatcher, settings.min_interval_seconds)
        self.beat = Beat(
            db,
            dispatcher,
            metrics,
            BeatPolicy(
                misfire_grace_seconds=settings.misfire_grace_seconds,
                requeue_after_seconds=settings.requeue_after_seconds,
                lease_seconds=settings.lease_seconds,
            ),
        )
        self.executor = RunExecutor(
            db,
            runtime,
            metrics,
            RunPolicy(
                run_timeout_seconds=settings.run_timeout_seconds,
                heartbeat_seconds=settings.heartbeat_seconds,
                lease_seconds=settings.lease_seconds,
                retry_max=settings.retry_max,
                retry_base_seconds=settings.retry_base_seconds,
                retry_cap_seconds=settings.retry_cap_seconds,
                queue_poll_seconds=settings.queue_poll_seconds,
            ),
            owners=owners,
        )
        self.owners = owners
        metrics.watch_queue(dispatcher.queue_depth)

    @classmethod
    def open(cls, settings: SchedulerSettings, dispatcher: Dispatcher, registry: CollectorRegistry) -> Scheduler:
        if settings.database_url.startswith("sqlite"):
            settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        db = MIGRATIONS.open_database(settings.database_url)
        runtime = GrpcRuntime(settings.runtime_target, settings.internal_plane())
        plane = settings.internal_plane()
        owners = RegistryOwners(settings.registry_target, plane) if settings.registry_target else None
        return cls(settings, db, runtime, dispatcher, SchedulerMetrics(registry), owners)

    def close(self) -> None:
        if isinstance(self.runtime, GrpcRuntime):
            self.runtime.close()
        if self.owners is not None:
            self.owners.close()
        self.db.close()
        self.metrics.close()
