"""Server factory: open the registry from settings and bind its gRPC services."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from jarvis.api.registry.v1 import project_pb2_grpc
from jarvis.api.registry.v1 import registry_pb2_grpc as pb_grpc
from jarvis.common.grpc_server import ServiceBinding
from jarvis.registry.app import Registry
from jarvis.registry.project_servicer import ProjectServicer
from jarvis.registry.servicer import RegistryServicer
from jarvis.registry.settings import RegistrySettings

REGISTRY_SERVICE = "jarvis.api.registry.v1.RegistryService"
PROJECT_SERVICE = "jarvis.api.registry.v1.ProjectService"


def open_registry(settings: RegistrySettings) -> Registry:
    """Connect to the database, migrate it to the newest schema and load the bundled catalog."""
    return Registry.open(settings)


def registry_bindings(registry: Registry, project_roots: Sequence[Path]) -> list[ServiceBinding]:
    """What `create_server` needs to serve `registry`: the one list that `jarvis serve registry` and
    `jarvis up` both bind, so the deployed and the embedded registry answer the same services."""
    return [
        ServiceBinding(
            add_to_server=pb_grpc.add_RegistryServiceServicer_to_server,
            servicer=RegistryServicer(registry),
            full_name=REGISTRY_SERVICE,
        ),
        # Project analysis reads the directory the caller names on the registry's host.
        ServiceBinding(
            add_to_server=project_pb2_grpc.add_ProjectServiceServicer_to_server,
            servicer=ProjectServicer(project_roots),
            full_name=PROJECT_SERVICE,
        ),
    ]


def build_registry_bindings(settings: RegistrySettings) -> list[ServiceBinding]:
    """Open the registry described by `settings` and return its bindings (the process owns it until exit)."""
    return registry_bindings(open_registry(settings), settings.project_roots)
