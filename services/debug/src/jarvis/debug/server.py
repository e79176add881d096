"""Server factory: build the debug gateway from settings and bind its gRPC service."""

from __future__ import annotations

from jarvis.api.debug.v1 import debug_pb2_grpc as pb_grpc
from jarvis.common.grpc_server import ServiceBinding
from jarvis.debug.backends import build_backends
from jarvis.debug.domain.gateway import Gateway
from jarvis.debug.servicer import DebugServicer
from jarvis.debug.settings import DebugSettings

DEBUG_SERVICE = "jarvis.api.debug.v1.DebugService"


def debug_bindings(gateway: Gateway) -> list[ServiceBinding]:
    """What `create_server` needs to serve `gateway`."""
    return [
        ServiceBinding(
            add_to_server=pb_grpc.add_DebugServiceServicer_to_server,
            servicer=DebugServicer(gateway),
            full_name=DEBUG_SERVICE,
        )
    ]


def build_debug_bindings(settings: DebugSettings) -> list[ServiceBinding]:
    """The gateway over every backend `settings` describes, ready to serve."""
    return debug_bindings(Gateway(build_backends(settings)))
