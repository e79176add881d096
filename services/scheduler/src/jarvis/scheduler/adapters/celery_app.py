"""Celery on Redis: the run task, the beat scheduler that fires SQL schedules, and a dispatcher for both.

Workers use the threads pool: runs mostly wait on the runtime, and one process keeps one
/metrics endpoint. `acks_late` plus `reject_on_worker_lost` mean a run whose worker is killed
is delivered again (after the visibility timeout on Redis); the executor makes that harmless.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import redis
from celery import Celery, Task, beat, signals
from prometheus_client import REGISTRY, start_http_server

from jarvis.common import tracing
from jarvis.common.errors import JarvisError
from jarvis.common.logging import configure_logging
from jarvis.scheduler.adapters.redis_lock import LeaderLock
from jarvis.scheduler.app import Scheduler
from jarvis.scheduler.domain.runs import RetryAt, run_span
from jarvis.scheduler.settings import SchedulerSettings

log = logging.getLogger(__name__)

RUN_TASK = "jarvis.scheduler.run"
WORKER_PING_SECONDS = 1.0
PRIORITY_SUFFIXES = ("", "\x06\x163", "\x06\x166", "\x06\x169")  # kombu's Redis lists per priority step


class CeleryDispatcher:
    """Publishes runs to the Celery queue; the depth is read from Redis."""

    def __init__(self, app: Celery, settings: SchedulerSettings) -> None:
        self._app = app
        self._queue = settings.queue
        self._redis = redis.Redis.from_url(settings.redis_url, socket_timeout=5, socket_connect_timeout=5)

    def dispatch(self, run_ids: list[str]) -> dict[str, str]:
        unsent: dict[str, str] = {}
        for run_id in run_ids:
            try:
                self._app.send_task(RUN_TASK, args=[run_id], queue=self._queue, headers=tracing.carrier())
            except Exception as exc:  # kombu raises many types; the run stays queued and beat's sweep resends it
                log.warning("run not sent to the queue", extra={"run_id": run_id, "reason": str(exc)})
                unsent[run_id] = (
                    f"the queue (Redis) cannot be reached: {exc}; the run is kept and sent when Redis is back"
                )
        return unsent

    def dispatch_later(self, run_id: str, at: datetime) -> None:
        try:
            self._app.send_task(RUN_TASK, args=[run_id], queue=self._queue, eta=at, headers=tracing.carrier())
        except Exception as exc:
            log.warning("run not sent to the queue", extra={"run_id": run_id, "reason": str(exc)})

    def queue_depth(self) -> int:
        try:
            return sum(int(self._redis.llen(self._queue + suffix)) for suffix in PRIORITY_SUFFIXES)
        except redis.RedisError:
            return -1

    def ping_workers(self) -> tuple[int, str]:
        """How many workers answer a control ping within a second, and what that means."""
        try:
            # Checked first: with the broker down, kombu would keep retrying its connection well past a probe.
            self._redis.ping()
        except redis.RedisError as exc:
            return 0, f"no worker can be asked: Redis (the broker) is unreachable ({exc.__class__.__name__})"
        try:
            replies = self._app.control.ping(timeout=WORKER_PING_SECONDS) or []
        except Exception as exc:  # kombu raises many types for a broker that fails mid-call
            return 0, f"the worker ping failed: {exc.__class__.__name__}"
        if not replies:
            return 0, (
                f"no Celery worker answered a ping within {WORKER_PING_SECONDS:g} s; start one "
                "(`jarvis serve scheduler-worker`)"
            )
        return len(replies), f"{len(replies)} Celery worker(s) answered a ping"


class Services:
    """Built on first use in each Celery process (the API process builds its own)."""

    def __init__(self, app: Celery, settings: SchedulerSettings) -> None:
        self._app = app
        self._settings = settings
        self._scheduler: Scheduler | None = None
        self._lock = threading.Lock()

    @property
    def scheduler(self) -> Scheduler:
        with self._lock:
            if self._scheduler is None:
                self._scheduler = Scheduler.open(self._settings, CeleryDispatcher(self._app, self._settings), REGISTRY)
            return self._scheduler


def create_celery_app(settings: SchedulerSettings) -> Celery:
    app = Celery("jarvis.scheduler", broker=settings.redis_url, set_as_current=False)
    app.conf.update(
        task_default_queue=settings.queue,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_ignore_result=True,
        result_backend=None,
        result_expires=None,
        worker_prefetch_multiplier=1,
        worker_pool="threads",
        worker_hijack_root_logger=False,
        broker_connection_retry_on_startup=True,
        # A Redis outage must stay a connection error, or the worker exits for good (see kombu_redis).
        broker_transport="jarvis.scheduler.adapters.kombu_redis:Transport",
        broker_transport_options={"visibility_timeout": settings.visibility_timeout_seconds},
        beat_scheduler="jarvis.scheduler.adapters.celery_app:SqlBeatScheduler",
        beat_max_loop_interval=settings.beat_interval_seconds,
    )
    services = Services(app, settings)
    app.jarvis_settings = settings  # type: ignore[attr-defined]
    app.jarvis_services = services  # type: ignore[attr-defined]

    @app.task(name=RUN_TASK, bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
    def run(task: Task[Any, Any], run_id: str) -> str:
        scheduler = services.scheduler
        # The trace of what queued the run comes in the task's headers (Celery makes them the request's fields).
        with run_span(run_id, {field: task.request.get(field) for field in tracing.FIELDS}):
            outcome = scheduler.executor.execute(run_id)
            if isinstance(outcome, RetryAt):
                scheduler.dispatcher.dispatch_later(run_id, outcome.at)  # the next delivery stays in this trace
                return "later"
        return outcome.state

    def start_metrics(**_: Any) -> None:
        if settings.metrics_port:
            start_http_server(settings.metrics_port)

    def traced_as(kind: str) -> Callable[..., None]:
        def start(**_: Any) -> None:
            tracing.configure(f"jarvis-scheduler-{kind}")  # where OTEL_EXPORTER_OTLP_ENDPOINT is set

        return start

    signals.worker_init.connect(start_metrics, weak=False)
    signals.beat_init.connect(start_metrics, weak=False)
    signals.worker_init.connect(traced_as("worker"), weak=False)
    signals.beat_init.connect(traced_as("beat"), weak=False)
    signals.worker_shutdown.connect(lambda **_: tracing.flush(), weak=False)  # the last runs' spans
    signals.setup_logging.connect(lambda **_: configure_logging(settings.log_level, settings.log_json), weak=False)
    return app


class SqlBeatScheduler(beat.Scheduler):
    """Celery beat over the scheduler's SQL schedules, behind a Redis leader lock.

    Every beat process ticks; only the lock holder fires. Schedules are read fresh on each tick,
    so creates, edits and deletes take effect without restarting beat.
    """

    def __init__(self, app: Celery, *args: Any, **kwargs: Any) -> None:
        self._settings: SchedulerSettings = app.jarvis_settings  # type: ignore[attr-defined]
        self._services: Services = app.jarvis_services  # type: ignore[attr-defined]
        self._lock = LeaderLock(
            redis.Redis.from_url(self._settings.redis_url, socket_timeout=5, socket_connect_timeout=5),
            f"{self._settings.queue}:beat-leader",
            self._settings.beat_lock_ttl_seconds,
        )
        self._last_sweep = float("-inf")
        super().__init__(app, *args, **kwargs)

    def setup_schedule(self) -> None:
        """No Celery-managed entries: the schedules are in SQL."""

    def tick(self, *args: Any, **kwargs: Any) -> float:
        scheduler = self._services.scheduler
        leading = self._lock.refresh()
        scheduler.metrics.leader.set(1 if leading else 0)
        if leading:
            try:
                if time.monotonic() - self._last_sweep >= self._settings.sweep_seconds:
                    scheduler.beat.requeue_stale()
                    self._last_sweep = time.monotonic()
                scheduler.beat.fire_due()
            except JarvisError as exc:
                log.warning("beat tick failed", extra={"reason": exc.message})
        return self._settings.beat_interval_seconds

    def close(self) -> None:
        self._lock.release()
        super().close()
        tracing.flush()  # the last fires' spans
