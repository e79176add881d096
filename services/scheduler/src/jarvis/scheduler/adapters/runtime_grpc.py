"""The runtime service over gRPC, as the scheduler's domain sees it (RuntimePort)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from jarvis.api.runtime.v1 import runtime_pb2 as pb
from jarvis.api.runtime.v1 import runtime_pb2_grpc as pb_grpc
from jarvis.common.errors import NotFound, Unavailable
from jarvis.common.grpc_client import sync_call, sync_channel
from jarvis.common.internal_plane import InternalPlane
from jarvis.scheduler.domain.models import SessionOutcome

RUNTIME_SERVICE = "jarvis.api.runtime.v1.RuntimeService"
# A spawn carries an idempotency key, so replaying it after UNAVAILABLE cannot start a second session.
IDEMPOTENT = {RUNTIME_SERVICE: ["GetProject", "GetSession", "SessionEvents", "EndSession"]}
SPAWN_TIMEOUT_SECONDS = 120.0
EVENTS_PAGE = 200
RUNNING = "running"

T = TypeVar("T")


class GrpcRuntime:
    def __init__(self, target: str, plane: InternalPlane | None = None) -> None:
        self.target = target
        # Beat and the API of a deployment without a runtime never call it: no channel without a target.
        self._channel = sync_channel(target, IDEMPOTENT, plane) if target else None
        self._stub = pb_grpc.RuntimeServiceStub(self._channel) if self._channel else None
        # The retry policy's service config caps calls at 120 s; a spawn that starts a container may need longer.
        self._long_channel = sync_channel(target, {}, plane) if target else None
        self._long = pb_grpc.RuntimeServiceStub(self._long_channel) if self._long_channel else None

    def _stubs(self) -> tuple[pb_grpc.RuntimeServiceStub, pb_grpc.RuntimeServiceStub]:
        if self._stub is None or self._long is None:
            raise Unavailable("no runtime service is configured; set JARVIS_SCHEDULER_RUNTIME_TARGET to its host:port")
        return self._stub, self._long

    def _call(self, method: Callable[..., T], request: Any, timeout: float = 30.0) -> T:
        return sync_call(method, request, timeout, "runtime", self.target)

    def missing_projects(self, project_ids: Iterable[str]) -> list[str]:
        missing = []
        for project_id in project_ids:
            try:
                self._call(self._stubs()[0].GetProject, pb.ProjectRef(project_id=project_id))
            except NotFound:
                missing.append(project_id)
        return missing

    def spawn(
        self,
        project_id: str,
        prompt: str,
        idempotency_key: str,
        secret_overrides: dict[str, str],
        session_id: str = "",
        agent_env: dict[str, str] | None = None,
    ) -> str:
        request = pb.SpawnSessionRequest(
            project_id=project_id,
            prompt=prompt,
            idempotency_key=idempotency_key,
            secret_overrides=secret_overrides,
            session_id=session_id,
            agent_env=agent_env or {},
        )
        session = self._call(self._stubs()[1].SpawnSession, request, SPAWN_TIMEOUT_SECONDS)
        return str(session.id)

    def wait_turn(
        self, project_id: str, session_id: str, cursor: int, wait_seconds: float
    ) -> tuple[int, SessionOutcome | None]:
        request = pb.SessionEventsRequest(
            project_id=project_id, session_id=session_id, after=cursor, limit=EVENTS_PAGE, wait_seconds=wait_seconds
        )
        page = self._call(self._stubs()[0].SessionEvents, request, wait_seconds + 15)
        for event in page.events:
            if event.type == "result":
                return event.seq, _result_outcome(event.payload_json)
        if page.state != RUNNING and not page.events:
            ref = pb.SessionRef(project_id=project_id, session_id=session_id)
            session = self._call(self._stubs()[0].GetSession, ref)
            ok = session.exit_code == 0
            return page.next_cursor, SessionOutcome(
                ok,
                ""
                if ok
                else (
                    f"the agent's session ended ({session.state}, exit code {session.exit_code}) before finishing its "
                    f"turn{': ' + session.detail if session.detail else ''}"
                ),
            )
        return page.next_cursor, None

    def end(self, project_id: str, session_id: str, force: bool) -> None:
        ref = pb.SessionRef(project_id=project_id, session_id=session_id, force=force)
        self._call(self._stubs()[0].EndSession, ref, 60.0)

    def close(self) -> None:
        for channel in (self._channel, self._long_channel):
            if channel is not None:
                channel.close()


def _result_outcome(payload_json: str) -> SessionOutcome:
    """A stream-json `result` line: success unless it says error (`is_error` or an `error_*` subtype)."""
    try:
        payload = json.loads(payload_json)
    except ValueError:
        payload = {}
    if not isinstance(payload, dict):
        payload = {}
    subtype = str(payload.get("subtype") or "success")
    if payload.get("is_error") or subtype.startswith("error"):
        detail = payload.get("result") or payload.get("error") or subtype
        return SessionOutcome(False, f"the agent reported an error ({subtype}): {str(detail)[:500]}")
    return SessionOutcome(True, "")
