"""Server factory: open the registry from settings and bind its gRPC services."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from prometheus_client import CollectorRegistry

from jarvis.api.registry.v1 import oauth_pb2_grpc, project_pb2_grpc, vault_pb2_grpc
from jarvis.api.registry.v1 import registry_pb2_grpc as pb_grpc
from jarvis.common.grpc_server import ServiceBinding
from jarvis.common.service import Bindings
from jarvis.registry.app import Registry
from jarvis.registry.oauth_servicer import OAuthStateServicer
from jarvis.registry.project_servicer import ProjectServicer
from jarvis.registry.servicer import RegistryServicer
from jarvis.registry.settings import RegistrySettings
from jarvis.registry.vault_servicer import DownstreamVaultServicer

REGISTRY_SERVICE = "jarvis.api.registry.v1.RegistryService"
PROJECT_SERVICE = "jarvis.api.registry.v1.ProjectService"
OAUTH_SERVICE = "jarvis.api.registry.v1.OAuthStateService"
VAULT_SERVICE = "jarvis.api.registry.v1.DownstreamVaultService"


def open_registry(settings: RegistrySettings) -> Registry:
    """Connect to the database, migrate it to the newest schema and load the bundled catalog."""
    return Registry.open(settings)


def registry_bindings(registry: Registry, project_roots: Sequence[Path]) -> list[ServiceBinding]:
    """The servicers over `registry`."""
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
        # Sign-in state every aggregator worker and replica shares (issue 31).
        ServiceBinding(
            add_to_server=oauth_pb2_grpc.add_OAuthStateServiceServicer_to_server,
            servicer=OAuthStateServicer(registry.oauth),
            full_name=OAUTH_SERVICE,
        ),
        # Each person's OAuth grants at downstream servers, sealed (issue 32).
        ServiceBinding(
            add_to_server=vault_pb2_grpc.add_DownstreamVaultServiceServicer_to_server,
            servicer=DownstreamVaultServicer(registry.vault),
            full_name=VAULT_SERVICE,
        ),
    ]


def build(settings: RegistrySettings, metrics: CollectorRegistry) -> Bindings:
    """The registry `settings` describe, opened, with its services; stopping it closes the database."""
    registry = open_registry(settings)
    return Bindings(
        services=registry_bindings(registry, settings.project_roots),
        close=registry.close,
        describe={"database": registry.db.dialect},
    )
