"""The aggregator's client of the runtime service: deadlines, retries for idempotent calls, domain errors."""

from __future__ import annotations

from typing import Any

from jarvis.aggregator.service_client import ServiceClient
from jarvis.api.runtime.v1 import runtime_pb2_grpc
from jarvis.common.grpc_client import aio_channel

RUNTIME_SERVICE = "jarvis.api.runtime.v1.RuntimeService"

# Reads and idempotent changes may be replayed when the runtime restarts; creates, execs and messages never.
IDEMPOTENT = {
    RUNTIME_SERVICE: [
        "ListProjects", "GetProject", "ProjectOptions", "ProjectTasks", "ProjectChanges", "StartContainer",
        "StopContainer", "ContainerLogs", "GetSession", "ListSessions", "SessionEvents", "ListWorkspaces",
        "GetLimits",
    ],
}


class RuntimeClient(ServiceClient):
    """Calls the runtime; its errors come back as the domain errors they stand for."""

    service = "runtime"

    def __init__(self, target: str) -> None:
        super().__init__(target, IDEMPOTENT)
        self.runtime = runtime_pb2_grpc.RuntimeServiceStub(self.channel)
        # The retry policy's service config also caps every call at 30 s; exec, spawn, clone and build may
        # need longer, so they go through a channel without one (and are never replayed).
        self._long_channel = aio_channel(target, {})
        self.long = runtime_pb2_grpc.RuntimeServiceStub(self._long_channel)

    def attach_server(self) -> Any:
        """A new AttachServer call (a `grpc.aio` bidirectional stream). No deadline: it lasts as long as the
        server runs; never replayed: each call is a container of its own."""
        return self.long.AttachServer()

    async def close(self) -> None:
        await super().close()
        await self._long_channel.close()
