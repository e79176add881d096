"""The one shape of a service process: `build(settings, metrics) -> Bindings`, started by `start` and run by `serve`.

Every service package (registry, runtime, scheduler, debug) exposes a `build` in its `server.py`. `python -m
jarvis.X`, `jarvis serve X` and `jarvis up` all start what that `build` returns, so a deployed service and an
embedded one bind the same gRPC services, answer the same health names and release the same things on stop.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from prometheus_client import REGISTRY, CollectorRegistry, start_http_server

from jarvis.common import tracing
from jarvis.common.errors import JarvisError
from jarvis.common.grpc_server import RunningServer, ServiceBinding, create_server
from jarvis.common.internal_plane import InternalPlane
from jarvis.common.logging import configure_logging
from jarvis.common.metrics import GrpcMetrics

log = logging.getLogger(__name__)


def _nothing() -> None:
    return None


@dataclass(frozen=True)
class Bindings:
    """What one service serves, built from its settings, and what its server's start and stop entail."""

    services: list[ServiceBinding]
    close: Callable[[], None] = _nothing  # after the server stopped (or failed to start): release what build opened
    serving: Callable[[], None] = _nothing  # once the server listens: background work that needs it up
    max_workers: int = 16
    describe: Mapping[str, Any] = field(default_factory=dict)  # what the "serving" log line adds to the port

    @property
    def health_names(self) -> list[str]:
        """The names health answers SERVING for (besides the server-wide "")."""
        return [binding.full_name for binding in self.services]


class ServiceSettings(Protocol):
    """What `serve` reads of a service's settings (a `ProcessSettings` with a `listen` address)."""

    listen: str
    log_level: str
    log_json: bool
    metrics_port: int

    def internal_plane(self) -> InternalPlane: ...


S = TypeVar("S", bound=ServiceSettings, contravariant=True)
T = TypeVar("T", bound=ServiceSettings)


class Factory(Protocol[S]):
    """A service package's `build`: open what the settings describe and say what to bind. `metrics` is the
    Prometheus registry the service's own metrics (beyond the gRPC ones) go to."""

    def __call__(self, settings: S, metrics: CollectorRegistry, /) -> Bindings: ...


class RunningService:
    """A started service: its gRPC server and the bindings it serves."""

    def __init__(self, server: RunningServer, bindings: Bindings) -> None:
        self.server = server
        self.bindings = bindings

    @property
    def port(self) -> int:
        return self.server.port

    def stop(self, grace: float = 5.0) -> None:
        """Health says NOT_SERVING, in-flight calls get `grace` seconds, then what build opened is released."""
        try:
            self.server.stop(grace)
        finally:
            self.bindings.close()


def start(
    bindings: Bindings, address: str, *, metrics: GrpcMetrics | None = None, plane: InternalPlane | None = None
) -> RunningService:
    """Serve `bindings` at `address` (port 0: any); a server that cannot start releases them."""
    try:
        server = create_server(
            bindings.services, address, metrics=metrics, max_workers=bindings.max_workers, plane=plane
        )
    except BaseException:
        bindings.close()
        raise
    bindings.serving()
    return RunningService(server, bindings)


def launch(
    build: Factory[T],
    settings: T,
    address: str,
    *,
    metrics: CollectorRegistry | None = None,
    grpc_metrics: GrpcMetrics | None = None,
    plane: InternalPlane | None = None,
) -> RunningService:
    """Build the service `settings` describe and start it at `address`, on the settings' internal plane unless
    `plane` is given. `metrics` gets the service's own metrics (a throwaway registry if None)."""
    plane = plane or settings.internal_plane()
    return start(build(settings, metrics or CollectorRegistry()), address, metrics=grpc_metrics, plane=plane)


def serve(name: str, settings_type: Callable[[], T], build: Factory[T]) -> None:
    """The whole of `python -m jarvis.<name>` and `jarvis serve <name>`: settings from the environment, logging,
    /metrics, the server, and a graceful stop on SIGTERM or SIGINT."""
    settings = settings_type()
    configure_logging(settings.log_level, settings.log_json)
    tracing.configure(f"jarvis-{name}")  # where OTEL_EXPORTER_OTLP_ENDPOINT is set
    if settings.metrics_port:
        start_http_server(settings.metrics_port)
    try:
        running = launch(build, settings, settings.listen, metrics=REGISTRY, grpc_metrics=GrpcMetrics(REGISTRY))
    except JarvisError as exc:
        sys.exit(f"jarvis {name}: {exc}")  # a deployment error (a missing key or credential): what to set, no trace
    logging.getLogger(f"jarvis.{name}").info(
        f"{name} serving", extra={"port": running.port, **running.bindings.describe}
    )
    wait_for_termination(running)


def wait_for_termination(running: RunningService, grace: float = 10.0) -> None:
    """Block until SIGTERM or SIGINT, then shut down gracefully."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    log.info("shutting down", extra={"grace_seconds": grace})
    running.stop(grace)
