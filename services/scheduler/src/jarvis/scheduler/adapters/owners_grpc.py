"""The people schedules act for, in the registry's sign-in records (OAuthStateService), as the run executor needs
them (OwnersPort): whether a schedule's owner is disabled, and a run's credential for them (decision 0057).

A run's credential is an opaque secret (`jva_…`) the registry keeps only the SHA-256 of, under kind `agent`, with
the person, the project and the session it was made for, until the run's time is up. The aggregator verifies it
there and authorizes its calls as that person within that project, with what the person's roles grant then."""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from typing import Any

from jarvis.api.registry.v1 import oauth_pb2 as pb
from jarvis.api.registry.v1 import oauth_pb2_grpc as pb_grpc
from jarvis.common import tracing
from jarvis.common.errors import NotFound
from jarvis.common.grpc_client import sync_call, sync_channel
from jarvis.common.internal_plane import InternalPlane
from jarvis.scheduler.domain.ports import OwnerStanding

OAUTH_SERVICE = "jarvis.api.registry.v1.OAuthStateService"
IDEMPOTENT = {OAUTH_SERVICE: ["GetRecord", "PutRecord", "RevokeFamily"]}
RUN_CREDENTIAL_PREFIX = "jva_"


class RegistryOwners:
    def __init__(self, target: str, plane: InternalPlane | None = None) -> None:
        self.target = target
        self._channel = sync_channel(target, IDEMPOTENT, plane)
        self._stub = pb_grpc.OAuthStateServiceStub(self._channel)

    def _call(self, method: Any, request: Any) -> Any:
        return sync_call(method, request, 10.0, "registry", self.target)

    def standing(self, subject: str) -> OwnerStanding | None:
        try:
            record = self._call(self._stub.GetRecord, pb.OAuthRecordKey(kind="user", key=subject))
        except NotFound:
            return None
        body = json.loads(record.body_json or "{}")
        return OwnerStanding(bool(body.get("disabled")), str(body.get("email") or subject))

    def credential(self, subject: str, project_id: str, session_id: str, run_id: str, ttl_seconds: int) -> str:
        secret = RUN_CREDENTIAL_PREFIX + secrets.token_urlsafe(32)
        now = int(time.time())
        body: dict[str, object] = {
            "subject": subject,
            "project_id": project_id,
            "session_id": session_id,
            "run_id": run_id,
            "issued_at": now,
        }
        # The run's trace, where traces are on: the agent's calls back into Jarvis with this credential join it
        # (decision 0066). Off, the record holds nothing of it.
        if trace := tracing.carrier():
            body["trace"] = trace
        record = pb.OAuthRecord(
            kind="agent",
            key=hashlib.sha256(secret.encode()).hexdigest(),
            family=f"run:{run_id}",  # every attempt's credential goes when the run ends
            body_json=json.dumps(body),
            expires_at=now + ttl_seconds,
        )
        self._call(self._stub.PutRecord, record)
        return secret

    def revoke(self, run_id: str) -> None:
        self._call(self._stub.RevokeFamily, pb.RevokeOAuthFamilyRequest(family=f"run:{run_id}"))

    def close(self) -> None:
        self._channel.close()
