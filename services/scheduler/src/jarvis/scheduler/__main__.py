"""`python -m jarvis.scheduler`: serve the scheduler's API (and, without Redis, its in-process beat)."""

from __future__ import annotations

import logging

from prometheus_client import REGISTRY, start_http_server

from jarvis.common.grpc_server import wait_for_termination
from jarvis.common.logging import configure_logging
from jarvis.common.metrics import GrpcMetrics
from jarvis.scheduler.server import serve_scheduler
from jarvis.scheduler.settings import SchedulerSettings

log = logging.getLogger("jarvis.scheduler")


def main() -> None:
    settings = SchedulerSettings()
    configure_logging(settings.log_level, settings.log_json)
    if settings.metrics_port:
        start_http_server(settings.metrics_port)
    running = serve_scheduler(settings, REGISTRY, GrpcMetrics(REGISTRY))
    log.info(
        "scheduler serving",
        extra={
            "port": running.port,
            "mode": "embedded" if settings.embedded else "celery",
            "runtime_target": settings.runtime_target,
        },
    )
    try:
        wait_for_termination(running.server)
    finally:
        running.stop()


if __name__ == "__main__":
    main()
