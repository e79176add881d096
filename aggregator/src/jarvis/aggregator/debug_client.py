"""The aggregator's client of the debug service: deadlines, retries for reads, domain errors."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import grpc.aio
from google.protobuf.message import Message

from jarvis.api.debug.v1 import debug_pb2_grpc
from jarvis.common.grpc_client import aio_channel
from jarvis.common.grpc_errors import error_from_rpc

DEBUG_SERVICE = "jarvis.api.debug.v1.DebugService"

# Invoke outlives the 30 s deadline that a retry policy in the channel's service config would impose
# on every method: project tools run test suites for up to 5 minutes. So the channel carries no
# service config (and Invoke is never replayed: a project tool can write), and each call sets its own
# deadline; the backends bound their remote calls well inside it.
INVOKE_TIMEOUT = 400.0

ResponseT = TypeVar("ResponseT", bound=Message)


class DebugClient:
    """Calls the debug service; its errors come back as the domain errors they stand for."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.channel = aio_channel(target, {})
        self.debug = debug_pb2_grpc.DebugServiceStub(self.channel)

    async def call(self, method: Callable[..., Awaitable[ResponseT]], request: Message,
                   timeout: float = 30.0) -> ResponseT:
        try:
            return await method(request, timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            raise error_from_rpc(exc, "debug") from None

    async def close(self) -> None:
        await self.channel.close()
