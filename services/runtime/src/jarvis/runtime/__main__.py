"""`python -m jarvis.runtime`: serve the runtime on its own."""

from __future__ import annotations

import logging
import sys

from prometheus_client import REGISTRY, start_http_server

from jarvis.common.grpc_server import wait_for_termination
from jarvis.common.logging import configure_logging
from jarvis.common.metrics import GrpcMetrics
from jarvis.runtime.domain.secrets import SecretsKeyMissing
from jarvis.runtime.server import serve_runtime
from jarvis.runtime.settings import RuntimeSettings

log = logging.getLogger("jarvis.runtime")


def main() -> None:
    settings = RuntimeSettings()
    configure_logging(settings.log_level, settings.log_json)
    if settings.metrics_port:
        start_http_server(settings.metrics_port)
    try:
        runtime, running = serve_runtime(settings, GrpcMetrics(REGISTRY))
    except SecretsKeyMissing as exc:
        sys.exit(f"jarvis runtime: {exc}")  # a deployment error: say what to set, no traceback
    log.info(
        "runtime serving",
        extra={"port": running.port, "docker_host": settings.docker_host, "instance": settings.instance},
    )
    try:
        wait_for_termination(running)
    finally:
        runtime.close()


if __name__ == "__main__":
    main()
