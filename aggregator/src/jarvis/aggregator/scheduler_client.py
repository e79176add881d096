"""The aggregator's client of the scheduler service: deadlines, retries for idempotent calls, domain errors."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import grpc.aio
from google.protobuf.message import Message

from jarvis.api.scheduler.v1 import scheduler_pb2_grpc
from jarvis.common.grpc_client import aio_channel
from jarvis.common.grpc_errors import error_from_rpc

SCHEDULER_SERVICE = "jarvis.api.scheduler.v1.SchedulerService"

# Reads, deletes and whole-or-nothing updates may be replayed when the scheduler restarts; a replayed
# create would make a second schedule and a replayed trigger a second set of runs, so those never are.
IDEMPOTENT = {
    SCHEDULER_SERVICE: [
        "ListSchedules", "GetSchedule", "ListRuns", "GetStatus", "DeleteSchedule", "UpdateSchedule",
    ],
}

ResponseT = TypeVar("ResponseT", bound=Message)


class SchedulerClient:
    """Calls the scheduler; its errors come back as the domain errors they stand for."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.channel = aio_channel(target, IDEMPOTENT)
        self.scheduler = scheduler_pb2_grpc.SchedulerServiceStub(self.channel)

    async def call(self, method: Callable[..., Awaitable[ResponseT]], request: Message,
                   timeout: float = 30.0) -> ResponseT:
        try:
            return await method(request, timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            raise error_from_rpc(exc, "scheduler") from None

    async def close(self) -> None:
        await self.channel.close()
