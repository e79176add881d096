"""Embedded mode: an in-process timer fires schedules and a thread pool runs them (no Redis, no Celery)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from jarvis.common import tracing
from jarvis.common.errors import JarvisError
from jarvis.common.sql.types import utcnow
from jarvis.scheduler.domain.beat import Beat
from jarvis.scheduler.domain.runs import Outcome, RetryAt, run_span

log = logging.getLogger(__name__)


class LocalDispatcher:
    """Runs each dispatched run on a thread; a run told to come back later is re-dispatched by a timer."""

    def __init__(self, workers: int) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="scheduler-run")
        self._execute: Callable[[str], Outcome] | None = None
        self._waiting = 0
        self._lock = threading.Lock()
        self._timers: set[threading.Timer] = set()
        self._closed = False

    def bind(self, execute: Callable[[str], Outcome]) -> None:
        self._execute = execute

    def dispatch(self, run_ids: list[str]) -> dict[str, str]:
        for index, run_id in enumerate(run_ids):
            if not self._submit(run_id, tracing.carrier()):  # the next start runs them (requeue_stale(every_queued))
                return dict.fromkeys(run_ids[index:], "the scheduler is stopping")
        return {}

    def _submit(self, run_id: str, trace: dict[str, str]) -> bool:
        """Hand the run to a pool thread, with the trace it belongs to (a thread does not inherit it)."""
        with self._lock:
            if self._closed:
                return False
            self._waiting += 1
        self._pool.submit(self._run, run_id, trace)
        return True

    def dispatch_later(self, run_id: str, at: datetime) -> None:
        delay = max((at - utcnow()).total_seconds(), 0.0)
        timer = threading.Timer(delay, self._fire_timer, args=(run_id, tracing.carrier()))
        timer.daemon = True
        with self._lock:
            if self._closed:
                return
            self._timers.add(timer)
        timer.start()

    def _fire_timer(self, run_id: str, trace: dict[str, str]) -> None:
        with self._lock:
            self._timers = {t for t in self._timers if t.is_alive() and t is not threading.current_thread()}
        self._submit(run_id, trace)

    def queue_depth(self) -> int:
        with self._lock:
            return self._waiting

    def _run(self, run_id: str, trace: dict[str, str]) -> None:
        with self._lock:
            self._waiting -= 1
        assert self._execute is not None, "bind() the executor before dispatching"
        with run_span(run_id, trace):
            try:
                outcome = self._execute(run_id)
            except JarvisError as exc:  # the database is down: the beat's sweep sends the run again later
                log.warning("run not executed", extra={"run_id": run_id, "reason": exc.message})
                return
            if isinstance(outcome, RetryAt):
                self.dispatch_later(run_id, outcome.at)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            timers = list(self._timers)
        for timer in timers:
            timer.cancel()
        self._pool.shutdown(wait=False, cancel_futures=True)


class LocalBeat:
    """Ticks the beat on a daemon thread: fires due schedules every interval, sweeps for lost runs now and then."""

    def __init__(self, beat: Beat, interval_seconds: float, sweep_seconds: float) -> None:
        self._beat = beat
        self._interval = interval_seconds
        self._sweep = sweep_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="scheduler-beat", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        since_sweep = 0.0
        first = True  # runs a previous process left queued resume at once
        while not self._stop.is_set():
            try:
                if first or since_sweep >= self._sweep:
                    self._beat.requeue_stale(every_queued=first)
                    first = False
                    since_sweep = 0.0
                self._beat.fire_due()
            except JarvisError as exc:
                log.warning("beat tick failed", extra={"reason": exc.message})
            self._stop.wait(self._interval)
            since_sweep += self._interval

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
