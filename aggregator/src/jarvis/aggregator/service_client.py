"""What every client of a backend service shares: one channel, deadlines, and errors as domain errors."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TypeVar

import grpc.aio
from google.protobuf.message import Message

from jarvis.common.grpc_client import aio_channel
from jarvis.common.grpc_errors import error_from_rpc

ResponseT = TypeVar("ResponseT", bound=Message)


class ServiceClient:
    """A channel to `target` whose failed calls raise the domain error they stand for, naming `service`."""

    service = "backend"

    def __init__(self, target: str, idempotent: Mapping[str, Iterable[str]]) -> None:
        self.target = target
        self.channel = aio_channel(target, idempotent)

    async def call(self, method: Callable[..., Awaitable[ResponseT]], request: Message,
                   timeout: float = 30.0) -> ResponseT:
        try:
            return await method(request, timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            raise error_from_rpc(exc, self.service) from None

    async def close(self) -> None:
        await self.channel.close()
