"""`celery -A jarvis.scheduler.celery_app worker|beat`: the Celery processes' entry point.

Celery imports a module-level app, so this module is where those processes read their settings
(like a `__main__`); nothing connects until a worker or beat starts.
"""

from __future__ import annotations

from jarvis.scheduler.adapters.celery_app import create_celery_app
from jarvis.scheduler.settings import SchedulerSettings

app = create_celery_app(SchedulerSettings())
