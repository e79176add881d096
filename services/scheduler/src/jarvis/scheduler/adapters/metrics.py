"""Prometheus metrics of the scheduler: runs by outcome, fire-to-session latency, queue depth, beat lag."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from jarvis.scheduler.domain.models import RUN_STATES

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0)
LAG_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 15.0, 60.0, 300.0)


class SchedulerMetrics:
    """Implements the domain's Observer. Labels are bounded (run states), never schedule or project ids."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.runs = Counter(
            "jarvis_scheduler_runs", "Scheduled runs finished, by outcome.", ["outcome"], registry=registry
        )
        for state in RUN_STATES:
            if state not in ("queued", "running"):
                self.runs.labels(outcome=state)
        self.start_latency = Histogram(
            "jarvis_scheduler_run_start_latency_seconds",
            "From a run's tick (cron fire or trigger) to its session started in the runtime.",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.beat_lag = Histogram(
            "jarvis_scheduler_beat_lag_seconds",
            "How late beat fired a schedule after its cron time.",
            buckets=LAG_BUCKETS,
            registry=registry,
        )
        self.queue_depth = Gauge(
            "jarvis_scheduler_queue_depth", "Runs waiting for a worker (-1: unknown).", registry=registry
        )
        self.leader = Gauge(
            "jarvis_scheduler_beat_leader", "1 while this beat holds the leader lock.", registry=registry
        )
        self._registry = registry

    def close(self) -> None:
        """Take these metrics out of the registry, so a scheduler restarted in the same process can add its own."""
        for collector in (self.runs, self.start_latency, self.beat_lag, self.queue_depth, self.leader):
            with contextlib.suppress(KeyError):  # closed before
                self._registry.unregister(collector)

    def run_finished(self, state: str) -> None:
        self.runs.labels(outcome=state).inc()

    def session_started(self, latency_seconds: float) -> None:
        self.start_latency.observe(max(latency_seconds, 0.0))

    def fired(self, lag_seconds: float) -> None:
        self.beat_lag.observe(max(lag_seconds, 0.0))

    def watch_queue(self, depth: Callable[[], int]) -> None:
        """Read the queue depth on every scrape, so it is never stale."""
        self.queue_depth.set_function(lambda: float(depth()))
