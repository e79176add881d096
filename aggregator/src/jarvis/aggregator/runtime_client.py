"""The aggregator's client of the runtime service: deadlines, retries for idempotent calls, domain errors."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import grpc.aio
from google.protobuf.message import Message

from jarvis.api.runtime.v1 import runtime_pb2_grpc
from jarvis.common.grpc_client import aio_channel
from jarvis.common.grpc_errors import error_from_rpc

RUNTIME_SERVICE = "jarvis.api.runtime.v1.RuntimeService"

# Reads and idempotent changes may be replayed when the runtime restarts; creates, execs and messages never.
IDEMPOTENT = {
    RUNTIME_SERVICE: [
        "ListProjects", "GetProject", "ProjectOptions", "ProjectTasks", "ProjectChanges", "StartContainer",
        "StopContainer", "ContainerLogs", "GetSession", "ListSessions", "SessionEvents", "ListWorkspaces",
        "GetLimits",
    ],
}

ResponseT = TypeVar("ResponseT", bound=Message)


class RuntimeClient:
    """Calls the runtime; its errors come back as the domain errors they stand for."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.channel = aio_channel(target, IDEMPOTENT)
        self.runtime = runtime_pb2_grpc.RuntimeServiceStub(self.channel)
        # The retry policy's service config also caps every call at 30 s; exec, spawn, clone and build may
        # need longer, so they go through a channel without one (and are never replayed).
        self._long_channel = aio_channel(target, {})
        self.long = runtime_pb2_grpc.RuntimeServiceStub(self._long_channel)

    async def call(self, method: Callable[..., Awaitable[ResponseT]], request: Message,
                   timeout: float = 30.0) -> ResponseT:
        try:
            return await method(request, timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            raise error_from_rpc(exc, "runtime") from None

    async def close(self) -> None:
        await self.channel.close()
        await self._long_channel.close()
