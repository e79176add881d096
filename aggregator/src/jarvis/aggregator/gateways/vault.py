"""The registry's DownstreamVaultService: each person's OAuth grant at each downstream server (issue 32).

The registry seals grants at rest; over the internal plane they travel as the JSON text the OAuth client keeps.
"""

from __future__ import annotations

from dataclasses import dataclass

from jarvis.aggregator.gateways.client import ServiceClient
from jarvis.api.registry.v1 import vault_pb2 as pb
from jarvis.api.registry.v1 import vault_pb2_grpc
from jarvis.common.errors import NotFound
from jarvis.common.internal_plane import InternalPlane

VAULT_SERVICE = "jarvis.api.registry.v1.DownstreamVaultService"
IDEMPOTENT = {VAULT_SERVICE: ["PutGrant", "GetGrant", "DeleteGrant", "ListGrants", "DeletePerson"]}


@dataclass(frozen=True)
class GrantState:
    """What a person may see of a grant: never a token."""

    server: str
    expires_at: int
    refreshable: bool
    has_tokens: bool


class VaultGateway(ServiceClient):
    service = "registry"

    def __init__(self, target: str, plane: InternalPlane | None = None) -> None:
        super().__init__(target, IDEMPOTENT, plane)
        self._stub = vault_pb2_grpc.DownstreamVaultServiceStub(self._channel)

    async def put(
        self, person: str, server: str, secret: str, *, expires_at: int, refreshable: bool, has_tokens: bool
    ) -> None:
        grant = pb.DownstreamGrant(
            person=person,
            server=server,
            secret_json=secret,
            expires_at=expires_at,
            refreshable=refreshable,
            has_tokens=has_tokens,
        )
        await self._call(self._stub.PutGrant, grant)

    async def get(self, person: str, server: str) -> str | None:
        """The grant's secret JSON, or None when the person has none at the server."""
        try:
            answer = await self._call(self._stub.GetGrant, pb.DownstreamGrantKey(person=person, server=server))
        except NotFound:
            return None
        return str(answer.secret_json)

    async def delete(self, person: str, server: str) -> bool:
        answer = await self._call(self._stub.DeleteGrant, pb.DownstreamGrantKey(person=person, server=server))
        return bool(answer.deleted)

    async def delete_person(self, person: str) -> int:
        answer = await self._call(self._stub.DeletePerson, pb.DeleteDownstreamPersonRequest(person=person))
        return int(answer.deleted)

    async def states(self, person: str) -> list[GrantState]:
        answer = await self._call(self._stub.ListGrants, pb.ListDownstreamGrantsRequest(person=person))
        return [GrantState(g.server, g.expires_at, g.refreshable, g.has_tokens) for g in answer.grants]
