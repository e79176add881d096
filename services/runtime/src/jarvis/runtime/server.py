"""Server factory: open the runtime from settings and bind its gRPC service."""

from __future__ import annotations

import threading

from jarvis.api.runtime.v1 import runtime_pb2_grpc as pb_grpc
from jarvis.common.grpc_server import RunningServer, ServiceBinding, create_server
from jarvis.common.metrics import GrpcMetrics
from jarvis.runtime.app import Runtime
from jarvis.runtime.servicer import RuntimeServicer
from jarvis.runtime.settings import RuntimeSettings

RUNTIME_SERVICE = "jarvis.api.runtime.v1.RuntimeService"


def runtime_bindings(runtime: Runtime) -> list[ServiceBinding]:
    """What `create_server` needs to serve `runtime`."""
    return [
        ServiceBinding(
            add_to_server=pb_grpc.add_RuntimeServiceServicer_to_server,
            servicer=RuntimeServicer(runtime),
            full_name=RUNTIME_SERVICE,
        )
    ]


def serve_runtime(
    settings: RuntimeSettings, metrics: GrpcMetrics | None, address: str | None = None
) -> tuple[Runtime, RunningServer]:
    """Open the runtime, serve it, and reconcile with the engine (in the background: Docker may be slow or down)."""
    runtime = Runtime.open(settings)
    try:
        # Sessions long-poll for events, so the pool is larger than a registry's.
        running = create_server(
            runtime_bindings(runtime),
            address or settings.listen,
            metrics=metrics,
            max_workers=settings.max_workers,
            plane=settings.internal_plane(),
        )
    except BaseException:
        runtime.close()
        raise
    threading.Thread(target=runtime.try_reconcile, name="runtime-reconcile", daemon=True).start()
    return runtime, running
