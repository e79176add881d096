"""The aggregator's client of the runtime service: deadlines, retries for idempotent calls, domain errors."""

from __future__ import annotations

from typing import Any, ClassVar

from jarvis.aggregator.gateways.client import ServiceClient
from jarvis.api.runtime.v1 import runtime_pb2_grpc
from jarvis.common.grpc_client import aio_channel
from jarvis.common.internal_plane import InternalPlane

RUNTIME_SERVICE = "jarvis.api.runtime.v1.RuntimeService"

# Reads and idempotent changes may be replayed when the runtime restarts; creates, execs and messages never.
IDEMPOTENT = {
    RUNTIME_SERVICE: [
        "ListProjects",
        "GetProject",
        "ProjectOptions",
        "ProjectTasks",
        "ProjectChanges",
        "StartContainer",
        "StopContainer",
        "ContainerLogs",
        "GetSession",
        "ListSessions",
        "SessionEvents",
        "ListWorkspaces",
        "GetLimits",
    ],
}


class RuntimeGateway(ServiceClient):
    """Calls the runtime; its errors come back as the domain errors they stand for."""

    service = "runtime"
    # Calls that run git or a command in a project's container, or write to an agent; the longest
    # (create, exec, spawn, build) pass their own deadline.
    slow: ClassVar[dict[str, float]] = {
        "ProjectOptions": 15.0,
        "ProjectTasks": 30.0,
        "ProjectChanges": 30.0,
        "MessageSession": 30.0,
        "RespondToolRequest": 30.0,
        "ContainerLogs": 15.0,
    }

    def __init__(self, target: str, plane: InternalPlane | None = None) -> None:
        super().__init__(target, IDEMPOTENT, plane)
        self.runtime = runtime_pb2_grpc.RuntimeServiceStub(self.channel)
        # The retry policy's service config also caps every call at 120 s; exec, spawn, clone and build may
        # need longer, so they go through a channel without one (and are never replayed).
        self._long_channel = aio_channel(target, {}, self.plane)
        self.long = runtime_pb2_grpc.RuntimeServiceStub(self._long_channel)

    def attach_server(self) -> Any:
        """A new AttachServer call (a `grpc.aio` bidirectional stream). No deadline: it lasts as long as the
        server runs; never replayed: each call is a container of its own."""
        return self.long.AttachServer()

    async def close(self) -> None:
        await super().close()
        await self._long_channel.close()
