"""`python -m jarvis.registry`: serve the registry on its own."""

from __future__ import annotations

import logging

from prometheus_client import REGISTRY, start_http_server

from jarvis.common.grpc_server import create_server, wait_for_termination
from jarvis.common.logging import configure_logging
from jarvis.common.metrics import GrpcMetrics
from jarvis.registry.server import open_registry, registry_bindings
from jarvis.registry.settings import RegistrySettings

log = logging.getLogger("jarvis.registry")


def main() -> None:
    settings = RegistrySettings()
    configure_logging(settings.log_level, settings.log_json)
    metrics = GrpcMetrics(REGISTRY)
    if settings.metrics_port:
        start_http_server(settings.metrics_port)
    registry = open_registry(settings)
    try:
        running = create_server(
            registry_bindings(registry, settings.project_roots),
            settings.listen,
            metrics=metrics,
            plane=settings.internal_plane(),
        )
        log.info("registry serving", extra={"port": running.port, "database": registry.db.dialect})
        wait_for_termination(running)
    finally:
        registry.close()


if __name__ == "__main__":
    main()
