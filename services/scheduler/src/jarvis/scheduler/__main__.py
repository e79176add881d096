"""`python -m jarvis.scheduler`: serve the scheduler's API (and, without Redis, its in-process beat)."""

from __future__ import annotations

from jarvis.common.service import serve
from jarvis.scheduler.server import build
from jarvis.scheduler.settings import SchedulerSettings


def main() -> None:
    serve("scheduler", SchedulerSettings, build)


if __name__ == "__main__":
    main()
