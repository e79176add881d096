"""Server factory: open the runtime from settings and bind its gRPC service."""

from __future__ import annotations

import threading

from prometheus_client import CollectorRegistry

from jarvis.api.runtime.v1 import runtime_pb2_grpc as pb_grpc
from jarvis.common.grpc_server import RunningServer, ServiceBinding
from jarvis.common.metrics import GrpcMetrics
from jarvis.common.service import Bindings, start
from jarvis.runtime.app import Runtime
from jarvis.runtime.servicer import RuntimeServicer
from jarvis.runtime.settings import RuntimeSettings

RUNTIME_SERVICE = "jarvis.api.runtime.v1.RuntimeService"


def runtime_bindings(runtime: Runtime) -> list[ServiceBinding]:
    """The servicer over `runtime`."""
    return [
        ServiceBinding(
            add_to_server=pb_grpc.add_RuntimeServiceServicer_to_server,
            servicer=RuntimeServicer(runtime),
            full_name=RUNTIME_SERVICE,
        )
    ]


def _bind(runtime: Runtime, settings: RuntimeSettings) -> Bindings:
    def reconcile_in_background() -> None:  # Docker may be slow or down: the runtime serves meanwhile
        threading.Thread(target=runtime.try_reconcile, name="runtime-reconcile", daemon=True).start()

    return Bindings(
        services=runtime_bindings(runtime),
        close=runtime.close,
        serving=reconcile_in_background,
        max_workers=settings.max_workers,  # sessions long-poll for events: a larger pool than a registry's
        describe={"docker_host": settings.docker_host, "instance": settings.instance},
    )


def build(settings: RuntimeSettings, metrics: CollectorRegistry) -> Bindings:
    """The runtime `settings` describe (stopped before touching anything when its secrets key is missing)."""
    return _bind(Runtime.open(settings), settings)


def serve_runtime(
    settings: RuntimeSettings, metrics: GrpcMetrics | None, address: str | None = None
) -> tuple[Runtime, RunningServer]:
    """The runtime served as `build` binds it, and the runtime itself, for callers that drive it directly (tests,
    benches): they stop the server, then close the runtime."""
    plane = settings.internal_plane()
    runtime = Runtime.open(settings)
    running = start(_bind(runtime, settings), address or settings.listen, metrics=metrics, plane=plane)
    return runtime, running.server
