"""The aggregator's client of the registry service: deadlines, retries, domain errors."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc
import grpc.aio
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from jarvis.api.registry.v1 import project_pb2_grpc, registry_pb2_grpc
from jarvis.common.grpc_client import aio_channel
from jarvis.common.grpc_errors import error_from_rpc

REGISTRY_SERVICE = "jarvis.api.registry.v1.RegistryService"
PROJECT_SERVICE = "jarvis.api.registry.v1.ProjectService"

# Reads and idempotent writes may be retried when the registry restarts; creates may not.
IDEMPOTENT = {
    REGISTRY_SERVICE: [
        "ListServers", "GetServer", "SearchServers", "ListCatalog", "GetCatalogEntry", "ListProfiles",
        "GetProfile", "SuggestProfiles", "ListClients", "GetConfig", "SetConfig", "ListConfig",
        "ListTokens", "VerifyToken", "RevokeToken", "GetUsage", "Bootstrap", "Doctor", "ClientConfigPath",
    ],
    PROJECT_SERVICE: ["Analyze", "Diff"],
}

ResponseT = TypeVar("ResponseT", bound=Message)


class RegistryClient:
    def __init__(self, target: str) -> None:
        self.target = target
        self.channel = aio_channel(target, IDEMPOTENT)
        self.registry = registry_pb2_grpc.RegistryServiceStub(self.channel)
        self.project = project_pb2_grpc.ProjectServiceStub(self.channel)

    async def call(self, method: Callable[..., Awaitable[ResponseT]], request: Message,
                   timeout: float = 30.0) -> ResponseT:
        try:
            return await method(request, timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            raise error_from_rpc(exc, "registry") from None

    async def close(self) -> None:
        await self.channel.close()


def to_dict(message: Message) -> dict[str, Any]:
    """A proto message as the JSON-ready dict MCP results carry (proto field names, defaults shown)."""
    return MessageToDict(message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)
