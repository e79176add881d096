"""`python -m jarvis.debug`: serve the debug gateway's backends on their own."""

from __future__ import annotations

import logging

from prometheus_client import REGISTRY, start_http_server

from jarvis.common.grpc_server import create_server, wait_for_termination
from jarvis.common.logging import configure_logging
from jarvis.common.metrics import GrpcMetrics
from jarvis.debug.server import build_debug_bindings
from jarvis.debug.settings import DebugSettings

log = logging.getLogger("jarvis.debug")


def main() -> None:
    settings = DebugSettings()
    configure_logging(settings.log_level, settings.log_json)
    metrics = GrpcMetrics(REGISTRY)
    if settings.metrics_port:
        start_http_server(settings.metrics_port)
    running = create_server(
        build_debug_bindings(settings), settings.listen, metrics=metrics, plane=settings.internal_plane()
    )
    log.info("debug serving", extra={"port": running.port})
    wait_for_termination(running)


if __name__ == "__main__":
    main()
