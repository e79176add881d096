"""Server factory: open the registry from settings and bind its gRPC services."""

from __future__ import annotations

from jarvis.api.registry.v1 import registry_pb2_grpc as pb_grpc
from jarvis.common.grpc_server import ServiceBinding
from jarvis.registry.app import Registry
from jarvis.registry.servicer import RegistryServicer
from jarvis.registry.settings import RegistrySettings

REGISTRY_SERVICE = "jarvis.api.registry.v1.RegistryService"


def open_registry(settings: RegistrySettings) -> Registry:
    """Connect to the database, migrate it to the newest schema and load the bundled catalog."""
    return Registry.open(settings)


def registry_bindings(registry: Registry) -> list[ServiceBinding]:
    """What `create_server` needs to serve `registry`."""
    return [
        ServiceBinding(
            add_to_server=pb_grpc.add_RegistryServiceServicer_to_server,
            servicer=RegistryServicer(registry),
            full_name=REGISTRY_SERVICE,
        )
    ]


def build_registry_bindings(settings: RegistrySettings) -> list[ServiceBinding]:
    """Open the registry described by `settings` and return its bindings (the process owns it until exit)."""
    return registry_bindings(open_registry(settings))
