"""The registry's OAuthStateService: the authorization server's shared state as JSON bodies by kind and key.

Every worker and replica reads and writes the same records, so a code issued by one is redeemed at another.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from jarvis.aggregator.gateways.client import ServiceClient
from jarvis.api.registry.v1 import oauth_pb2 as pb
from jarvis.api.registry.v1 import oauth_pb2_grpc
from jarvis.common.errors import NotFound
from jarvis.common.internal_plane import InternalPlane

OAUTH_SERVICE = "jarvis.api.registry.v1.OAuthStateService"
# Reads may be retried when the registry restarts; a take may not (a retried take would look like a replay).
IDEMPOTENT = {OAUTH_SERVICE: ["GetRecord", "ListRecords", "PutRecord", "RevokeFamily", "DeleteRecord"]}


@dataclass(frozen=True)
class Stored:
    key: str
    body: dict[str, Any]
    family: str
    consumed: bool


def _stored(record: pb.OAuthRecord) -> Stored:
    return Stored(record.key, json.loads(record.body_json or "{}"), record.family, record.consumed)


class OAuthStateGateway(ServiceClient):
    service = "registry"

    def __init__(self, target: str, plane: InternalPlane | None = None) -> None:
        super().__init__(target, IDEMPOTENT, plane)
        self._stub = oauth_pb2_grpc.OAuthStateServiceStub(self._channel)

    async def put(self, kind: str, key: str, body: dict[str, Any], *, family: str = "", ttl: float = 0) -> None:
        expires = int(time.time() + ttl) if ttl else 0
        record = pb.OAuthRecord(kind=kind, key=key, family=family, body_json=json.dumps(body), expires_at=expires)
        await self._call(self._stub.PutRecord, record)

    async def get(self, kind: str, key: str) -> Stored | None:
        """The live record, or None when it is unknown, expired or revoked."""
        try:
            return _stored(await self._call(self._stub.GetRecord, pb.OAuthRecordKey(kind=kind, key=key)))
        except NotFound:
            return None

    async def take(self, kind: str, key: str) -> tuple[Stored, bool] | None:
        """The live record and whether this call consumed it first (False: a replay); None when there is none."""
        try:
            answer = await self._call(self._stub.TakeRecord, pb.OAuthRecordKey(kind=kind, key=key))
        except NotFound:
            return None
        return _stored(answer.record), answer.first

    async def revoke_family(self, family: str) -> int:
        answer = await self._call(self._stub.RevokeFamily, pb.RevokeOAuthFamilyRequest(family=family))
        return int(answer.revoked)

    async def list(self, kind: str) -> list[Stored]:
        answer = await self._call(self._stub.ListRecords, pb.ListOAuthRecordsRequest(kind=kind))
        return [_stored(r) for r in answer.records]

    async def delete(self, kind: str, key: str) -> bool:
        answer = await self._call(self._stub.DeleteRecord, pb.OAuthRecordKey(kind=kind, key=key))
        return bool(answer.deleted)
