"""The aggregator's client of the registry service: deadlines, retries, domain errors."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, TypeVar

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from jarvis.aggregator.gateways.client import ServiceClient
from jarvis.aggregator.views.registry import (
    ProfileDeleted,
    ProfileSuggestion,
    ProfileSuggestions,
    ProfileView,
    TokenCreated,
    TokenView,
)
from jarvis.api.registry.v1 import project_pb2_grpc, registry_pb2, registry_pb2_grpc
from jarvis.common.internal_plane import InternalPlane

REGISTRY_SERVICE = "jarvis.api.registry.v1.RegistryService"
PROJECT_SERVICE = "jarvis.api.registry.v1.ProjectService"

# Reads and idempotent writes may be retried when the registry restarts; creates may not.
IDEMPOTENT = {
    REGISTRY_SERVICE: [
        "ListServers",
        "GetServer",
        "SearchServers",
        "ListCatalog",
        "GetCatalogEntry",
        "ListProfiles",
        "GetProfile",
        "SuggestProfiles",
        "ListClients",
        "GetConfig",
        "SetConfig",
        "ListConfig",
        "ListTokens",
        "VerifyToken",
        "RevokeToken",
        "GetUsage",
        "Bootstrap",
        "Doctor",
        "ClientConfigPath",
        "RecordToolPins",
        "ListToolPins",
        "ApproveToolPins",
    ],
    PROJECT_SERVICE: ["Analyze", "Diff"],
}

ResponseT = TypeVar("ResponseT", bound=Message)

# Requests that cannot change what cached reads return; any other request drops the cache.
_KEEPS_CACHE = frozenset(
    {
        "ListServersRequest",
        "GetServerRequest",
        "SearchServersRequest",
        "ListCatalogRequest",
        "GetCatalogEntryRequest",
        "ListProfilesRequest",
        "GetProfileRequest",
        "SuggestProfilesRequest",
        "ListClientsRequest",
        "GetConfigRequest",
        "ListConfigRequest",
        "ListTokensRequest",
        "VerifyTokenRequest",
        "RecordUsageRequest",
        "GetUsageRequest",
        "DoctorRequest",
        "AnalyzeRequest",
        "DiffRequest",
        "ListToolPinsRequest",
    }
)


class RegistryGateway(ServiceClient):
    """Calls the registry; answers hot reads (the server list every agent asks for) from a short cache.

    A write made through this client drops the cache at once; a write made elsewhere (the CLI,
    another aggregator replica) is seen within `read_cache_seconds`.
    """

    service = "registry"
    # Reads and small writes get the default few seconds; these do real work (git, file walks, imports).
    slow: ClassVar[dict[str, float]] = {
        "Bootstrap": 60.0,
        "ImportCatalog": 120.0,
        "Analyze": 60.0,
        "Diff": 60.0,
        "ApplyDevops": 60.0,
        "MigrateConfig": 30.0,
        "ImportClient": 30.0,
        "EditClient": 30.0,
        "SuggestProfiles": 15.0,
        "SearchServers": 10.0,
        "ListCatalog": 10.0,
        "RecordUsage": 15.0,
        "InstallServer": 15.0,
        "CreateServer": 15.0,
        "EditServer": 15.0,
        "UninstallServer": 15.0,
    }

    def __init__(self, target: str, read_cache_seconds: float = 2.0, plane: InternalPlane | None = None) -> None:
        super().__init__(target, IDEMPOTENT, plane)
        self.registry = registry_pb2_grpc.RegistryServiceStub(self.channel)
        self.project = project_pb2_grpc.ProjectServiceStub(self.channel)
        self._ttl = read_cache_seconds
        self._cache: dict[bytes, tuple[float, Message]] = {}

    async def call(
        self, method: Callable[..., Awaitable[ResponseT]], request: Message, timeout: float | None = None
    ) -> ResponseT:
        if type(request).__name__ not in _KEEPS_CACHE:
            self._cache.clear()
        return await super().call(method, request, timeout)

    async def cached(self, method: Callable[..., Awaitable[ResponseT]], request: Message) -> ResponseT:
        """A read answered from the cache when fresh. Callers must not mutate the response."""
        key = type(request).__name__.encode() + request.SerializeToString(deterministic=True)
        hit = self._cache.get(key)
        now = time.monotonic()
        if hit is not None and hit[0] > now:
            return hit[1]  # type: ignore[return-value]
        response = await self.call(method, request)
        self._cache[key] = (now + self._ttl, response)
        return response

    # Profiles

    async def list_profiles(self) -> list[ProfileView]:
        response = await self.call(self.registry.ListProfiles, registry_pb2.ListProfilesRequest())
        return [profile_view(p) for p in response.profiles]

    async def get_profile(self, name: str) -> ProfileView:
        return profile_view(await self.call(self.registry.GetProfile, registry_pb2.GetProfileRequest(name=name)))

    async def create_profile(self, name: str, description: str, servers: list[str]) -> ProfileView:
        request = registry_pb2.CreateProfileRequest(name=name, description=description, servers=servers)
        return profile_view(await self.call(self.registry.CreateProfile, request))

    async def edit_profile(
        self,
        name: str,
        *,
        add: list[str],
        remove: list[str],
        new_name: str | None = None,
        description: str | None = None,
    ) -> ProfileView:
        request = registry_pb2.EditProfileRequest(
            name=name, add_servers=add, remove_servers=remove, new_name=new_name, description=description
        )
        return profile_view(await self.call(self.registry.EditProfile, request))

    async def delete_profile(self, name: str) -> ProfileDeleted:
        response = await self.call(self.registry.DeleteProfile, registry_pb2.DeleteProfileRequest(name=name))
        return ProfileDeleted(name=response.name, removed_from_clients=list(response.removed_from_clients))

    async def suggest_profiles(self, project_dir: str) -> ProfileSuggestions:
        request = registry_pb2.SuggestProfilesRequest(project_dir=project_dir)
        response = await self.call(self.registry.SuggestProfiles, request)
        return ProfileSuggestions(
            suggestions=[
                ProfileSuggestion(name=s.name, servers=list(s.servers), reasons=list(s.reasons), exists=s.exists)
                for s in response.suggestions
            ],
            detected=list(response.detected),
            clients_detected=list(response.clients_detected),
        )

    # Tokens (the orchestrator's `token` tool)

    async def create_token(self, name: str, scopes: list[str], expires_in_seconds: int) -> TokenCreated:
        request = registry_pb2.CreateTokenRequest(name=name, scopes=scopes, expires_in_seconds=expires_in_seconds)
        response = await self.call(self.registry.CreateToken, request)
        return TokenCreated(token=token_view(response.token), secret=response.secret)

    async def list_tokens(self, include_revoked: bool) -> list[TokenView]:
        request = registry_pb2.ListTokensRequest(include_revoked=include_revoked)
        return [token_view(t) for t in (await self.call(self.registry.ListTokens, request)).tokens]

    async def revoke_token(self, token_id: str) -> TokenView:
        return token_view(await self.call(self.registry.RevokeToken, registry_pb2.RevokeTokenRequest(id=token_id)))


def token_view(token: registry_pb2.Token) -> TokenView:
    return TokenView(
        id=token.id,
        name=token.name,
        prefix=token.prefix,
        scopes=list(token.scopes),
        created_at=timestamp(token, "created_at"),
        expires_at=timestamp(token, "expires_at"),
        revoked_at=timestamp(token, "revoked_at"),
        last_used_at=timestamp(token, "last_used_at"),
    )


def timestamp(message: Message, name: str) -> str | None:
    """A Timestamp field in RFC 3339, or None when unset (the view then leaves it out)."""
    return getattr(message, name).ToJsonString() if message.HasField(name) else None


def profile_view(profile: registry_pb2.Profile) -> ProfileView:
    return ProfileView(
        name=profile.name,
        description=profile.description,
        servers=list(profile.servers),
        created_at=timestamp(profile, "created_at"),
        updated_at=timestamp(profile, "updated_at"),
    )


_64_BIT = frozenset(
    {
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_FIXED64,
        FieldDescriptor.TYPE_SFIXED64,
    }
)


def to_dict(message: Message) -> dict[str, Any]:
    """A proto message as the JSON-ready dict MCP results carry (proto field names, defaults shown).

    Proto3's JSON mapping writes 64-bit integers as strings (for JavaScript); a count an agent reads
    must be a number, so they are turned back into ints.
    """
    data = MessageToDict(message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)
    _numbers(message.DESCRIPTOR, data)
    return data


def _numbers(descriptor: Any, data: dict[str, Any]) -> None:
    for field in descriptor.fields:
        value = data.get(field.name)
        if value is None:
            continue
        if field.type in _64_BIT:
            data[field.name] = [int(v) for v in value] if isinstance(value, list) else int(value)
        elif field.message_type is not None and not field.message_type.GetOptions().map_entry:
            if field.message_type.full_name.startswith("google.protobuf."):
                continue  # well-known types (Timestamp, Struct…) have their own JSON forms
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, dict):
                    _numbers(field.message_type, item)
