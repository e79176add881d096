"""`jarvis serve scheduler-worker|scheduler-beat`: the Celery processes, started from the one image's CLI.

Equivalent to `celery -A jarvis.scheduler.celery_app worker|beat`, with the queue and log level from
the same settings; extra arguments go to Celery as they are.
"""

from __future__ import annotations

from collections.abc import Sequence

from jarvis.common.errors import InvalidArgument
from jarvis.scheduler.adapters.celery_app import create_celery_app
from jarvis.scheduler.settings import SchedulerSettings


def _settings() -> SchedulerSettings:
    settings = SchedulerSettings()
    if settings.embedded:
        raise InvalidArgument(
            "Celery workers and beat need Redis: set JARVIS_SCHEDULER_REDIS_URL (or REDIS_URL); "
            "without Redis the scheduler service runs schedules itself"
        )
    settings.internal_plane()  # an unreadable credential file stops the process now, not at its first run
    return settings


def run_worker(extra: Sequence[str] = ()) -> None:
    settings = _settings()
    app = create_celery_app(settings)
    app.worker_main(["worker", "--loglevel", settings.log_level, "--queues", settings.queue, *extra])


def run_beat(extra: Sequence[str] = ()) -> None:
    settings = _settings()
    app = create_celery_app(settings)
    app.start(["beat", "--loglevel", settings.log_level, *extra])
