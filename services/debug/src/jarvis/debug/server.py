"""Server factory: build the debug gateway from settings and bind its gRPC service."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from jarvis.api.debug.v1 import debug_pb2_grpc as pb_grpc
from jarvis.common.grpc_server import ServiceBinding
from jarvis.common.service import Bindings
from jarvis.debug.app import open_gateway
from jarvis.debug.domain.gateway import Gateway
from jarvis.debug.servicer import DebugServicer
from jarvis.debug.settings import DebugSettings

DEBUG_SERVICE = "jarvis.api.debug.v1.DebugService"


def debug_bindings(gateway: Gateway) -> list[ServiceBinding]:
    """The servicer over `gateway`."""
    return [
        ServiceBinding(
            add_to_server=pb_grpc.add_DebugServiceServicer_to_server,
            servicer=DebugServicer(gateway),
            full_name=DEBUG_SERVICE,
        )
    ]


def build(settings: DebugSettings, metrics: CollectorRegistry) -> Bindings:
    """The gateway over every backend `settings` describe (nothing to close: backends open per call)."""
    return Bindings(services=debug_bindings(open_gateway(settings)))
