"""What every client of a backend service shares: one channel, deadlines sized to each call, and errors
as domain errors that name the service, where it was called and what to check."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, ClassVar, TypeVar

import grpc.aio
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc

from jarvis.common import tracing
from jarvis.common.grpc_client import aio_channel, method_name
from jarvis.common.grpc_errors import error_from_rpc
from jarvis.common.internal_plane import InternalPlane

ResponseT = TypeVar("ResponseT", bound=Message)

# A healthy service answers a read or a small write in milliseconds; a hung one (stopped, deadlocked,
# its database gone) should be reported within seconds, not after half a minute.
DEFAULT_DEADLINE_SECONDS = 5.0


class ServiceClient:
    """A channel to `target` whose failed calls raise the domain error they stand for, naming `service`.

    Each call gets the deadline given by its caller, else the one `slow` lists for its method (work that
    walks a repository, starts a container, imports a catalog), else `DEFAULT_DEADLINE_SECONDS`.
    """

    service = "backend"
    slow: ClassVar[Mapping[str, float]] = {}

    def __init__(
        self, target: str, idempotent: Mapping[str, Iterable[str]], plane: InternalPlane | None = None
    ) -> None:
        self.target = target
        self.plane = plane or InternalPlane()
        self._channel = aio_channel(target, idempotent, self.plane)

    def deadline_for(self, method: Any) -> float:
        return self.slow.get(method_name(method), DEFAULT_DEADLINE_SECONDS)

    async def _call(
        self, method: Callable[..., Awaitable[ResponseT]], request: Message, timeout: float | None = None
    ) -> ResponseT:
        deadline = timeout if timeout is not None else self.deadline_for(method)
        with tracing.client_span(self.service, method_name(method)) as metadata:  # the call's context, where traced
            try:
                return await method(request, timeout=deadline, metadata=metadata or None)
            except grpc.aio.AioRpcError as exc:
                raise error_from_rpc(exc, self.service, self.target, deadline) from None

    async def check_health(self, full_name: str, timeout: float) -> dict[str, Any]:
        """The standard gRPC health check of `full_name` on this channel (open to callers without a credential):
        {"ok", "detail", "latency_ms"} as the probes report it."""
        stub = health_pb2_grpc.HealthStub(self._channel)
        started = time.perf_counter()
        try:
            resp = await stub.Check(health_pb2.HealthCheckRequest(service=full_name), timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            return {"ok": False, "detail": str(error_from_rpc(exc, self.service, self.target, timeout))}
        status = health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status)
        return {
            "ok": status == "SERVING",
            "detail": status,
            "latency_ms": round((time.perf_counter() - started) * 1000, 2),
        }

    async def close(self) -> None:
        await self._channel.close()
