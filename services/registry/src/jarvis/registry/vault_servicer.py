"""DownstreamVaultService over gRPC: unpack the request, call the vault (domain/vault.py), pack the answer."""

from __future__ import annotations

import grpc

from jarvis.api.registry.v1 import vault_pb2 as pb
from jarvis.api.registry.v1 import vault_pb2_grpc as pb_grpc
from jarvis.registry.domain.vault import Grant, GrantInfo, Vault


def _info(info: GrantInfo) -> pb.DownstreamGrantInfo:
    return pb.DownstreamGrantInfo(
        person=info.person,
        server=info.server,
        expires_at=info.expires_at,
        refreshable=info.refreshable,
        updated_at=info.updated_at,
        has_tokens=info.has_tokens,
    )


class DownstreamVaultServicer(pb_grpc.DownstreamVaultServiceServicer):
    """Domain errors propagate; the server's interceptor maps them to status codes."""

    def __init__(self, vault: Vault) -> None:
        self._vault = vault

    def PutGrant(self, request: pb.DownstreamGrant, context: grpc.ServicerContext) -> pb.DownstreamGrantInfo:
        grant = Grant(request.person, request.server, request.secret_json, request.expires_at, request.refreshable)
        return _info(self._vault.put(grant, has_tokens=request.has_tokens))

    def GetGrant(self, request: pb.DownstreamGrantKey, context: grpc.ServicerContext) -> pb.DownstreamGrant:
        grant = self._vault.get(request.person, request.server)
        return pb.DownstreamGrant(
            person=grant.person,
            server=grant.server,
            secret_json=grant.secret,
            expires_at=grant.expires_at,
            refreshable=grant.refreshable,
        )

    def DeleteGrant(
        self, request: pb.DownstreamGrantKey, context: grpc.ServicerContext
    ) -> pb.DeleteDownstreamGrantResponse:
        return pb.DeleteDownstreamGrantResponse(deleted=self._vault.delete(request.person, request.server))

    def ListGrants(
        self, request: pb.ListDownstreamGrantsRequest, context: grpc.ServicerContext
    ) -> pb.ListDownstreamGrantsResponse:
        return pb.ListDownstreamGrantsResponse(grants=[_info(g) for g in self._vault.list(request.person)])

    def DeletePerson(
        self, request: pb.DeleteDownstreamPersonRequest, context: grpc.ServicerContext
    ) -> pb.DeleteDownstreamGrantResponse:
        return pb.DeleteDownstreamGrantResponse(deleted=self._vault.delete_person(request.person))
