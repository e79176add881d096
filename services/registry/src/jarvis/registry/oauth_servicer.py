"""OAuthStateService over gRPC: unpack the request, call the domain (domain/oauth_records.py), pack the answer."""

from __future__ import annotations

import grpc

from jarvis.api.registry.v1 import oauth_pb2 as pb
from jarvis.api.registry.v1 import oauth_pb2_grpc as pb_grpc
from jarvis.registry.domain.oauth_records import OAuthRecord, OAuthRecords


def _to_pb(record: OAuthRecord) -> pb.OAuthRecord:
    return pb.OAuthRecord(
        kind=record.kind,
        key=record.key,
        family=record.family,
        body_json=record.body,
        expires_at=record.expires_at,
        consumed=record.consumed,
    )


class OAuthStateServicer(pb_grpc.OAuthStateServiceServicer):
    """Domain errors propagate; the server's interceptor maps them to status codes."""

    def __init__(self, records: OAuthRecords) -> None:
        self._records = records

    def PutRecord(self, request: pb.OAuthRecord, context: grpc.ServicerContext) -> pb.OAuthRecord:
        record = OAuthRecord(request.kind, request.key, request.family, request.body_json, request.expires_at)
        return _to_pb(self._records.put(record))

    def GetRecord(self, request: pb.OAuthRecordKey, context: grpc.ServicerContext) -> pb.OAuthRecord:
        return _to_pb(self._records.get(request.kind, request.key))

    def TakeRecord(self, request: pb.OAuthRecordKey, context: grpc.ServicerContext) -> pb.TakeOAuthRecordResponse:
        record, first = self._records.take(request.kind, request.key)
        return pb.TakeOAuthRecordResponse(record=_to_pb(record), first=first)

    def RevokeFamily(
        self, request: pb.RevokeOAuthFamilyRequest, context: grpc.ServicerContext
    ) -> pb.RevokeOAuthFamilyResponse:
        return pb.RevokeOAuthFamilyResponse(revoked=self._records.revoke_family(request.family))

    def ListRecords(
        self, request: pb.ListOAuthRecordsRequest, context: grpc.ServicerContext
    ) -> pb.ListOAuthRecordsResponse:
        return pb.ListOAuthRecordsResponse(records=[_to_pb(r) for r in self._records.list(request.kind)])

    def DeleteRecord(self, request: pb.OAuthRecordKey, context: grpc.ServicerContext) -> pb.DeleteOAuthRecordResponse:
        return pb.DeleteOAuthRecordResponse(deleted=self._records.delete(request.kind, request.key))
