"""Client channels with deadlines, retries for idempotent calls, and the internal plane's credential."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import grpc
import grpc.aio

from jarvis.common import tracing
from jarvis.common.grpc_errors import error_from_rpc
from jarvis.common.internal_plane import InternalPlane

T = TypeVar("T")

# A backstop for a call whose caller set no deadline. Callers size their own (a few seconds for a read,
# minutes for an import); this only keeps a forgotten one from waiting forever on a hung peer.
DEFAULT_DEADLINE_SECONDS = 120.0


def method_name(method: Any) -> str:
    """`Bootstrap` for the stub method of /jarvis.api.registry.v1.RegistryService/Bootstrap."""
    path = getattr(method, "_method", b"")
    return (path.decode() if isinstance(path, bytes) else str(path)).rpartition("/")[2]


def sync_call(method: Callable[..., T], request: Any, timeout: float, service: str, target: str) -> T:
    """One blocking call (a worker's), under a client span whose context its metadata carries where traced; a failure
    as the domain error it stands for, naming `service` at `target`."""
    with tracing.client_span(service, method_name(method)) as metadata:
        try:
            return method(request, timeout=timeout, metadata=metadata or None)
        except grpc.RpcError as exc:
            raise error_from_rpc(exc, service, target, timeout) from None


def _service_config(idempotent: Mapping[str, Iterable[str]]) -> str:
    """Retry UNAVAILABLE (a restarting peer) for idempotent methods only; writes are never replayed.

    `idempotent` maps full service names to the methods that are safe to send twice.
    """
    return json.dumps(
        {
            "methodConfig": [
                {
                    "name": [{"service": s, "method": m} for s, methods in idempotent.items() for m in methods],
                    "timeout": f"{DEFAULT_DEADLINE_SECONDS}s",
                    "retryPolicy": {
                        "maxAttempts": 4,
                        "initialBackoff": "0.1s",
                        "maxBackoff": "2s",
                        "backoffMultiplier": 2,
                        "retryableStatusCodes": ["UNAVAILABLE"],
                    },
                },
                {"name": [{"service": s} for s in idempotent], "timeout": f"{DEFAULT_DEADLINE_SECONDS}s"},
            ]
        }
    )


def _options(idempotent: Mapping[str, Iterable[str]]) -> list[tuple[str, object]]:
    return [
        ("grpc.enable_retries", 1),
        ("grpc.service_config", _service_config(idempotent)),
        ("grpc.max_receive_message_length", 16 * 1024 * 1024),
    ]


class _AioCredential:
    """Adds the service credential to a call of an asyncio channel.

    grpc.aio files each interceptor under the first kind it matches, so each kind gets an object of its own.
    """

    def __init__(self, pairs: tuple[tuple[str, str], ...]) -> None:
        self._pairs = pairs

    def _details(self, details: Any) -> Any:
        return details._replace(metadata=grpc.aio.Metadata(*(details.metadata or ()), *self._pairs))


class _AioUnaryUnary(_AioCredential, grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(self._details(details), request)


class _AioUnaryStream(_AioCredential, grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[misc]
    async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(self._details(details), request)


class _AioStreamUnary(_AioCredential, grpc.aio.StreamUnaryClientInterceptor):  # type: ignore[misc]
    async def intercept_stream_unary(self, continuation: Any, details: Any, requests: Any) -> Any:
        return await continuation(self._details(details), requests)


class _AioStreamStream(_AioCredential, grpc.aio.StreamStreamClientInterceptor):  # type: ignore[misc]
    async def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        return await continuation(self._details(details), requests)


class _SyncCredential(
    grpc.UnaryUnaryClientInterceptor,  # type: ignore[misc]
    grpc.UnaryStreamClientInterceptor,  # type: ignore[misc]
    grpc.StreamUnaryClientInterceptor,  # type: ignore[misc]
    grpc.StreamStreamClientInterceptor,  # type: ignore[misc]
):
    """The same for a blocking channel (grpc.intercept_channel asks one object for every kind)."""

    def __init__(self, pairs: tuple[tuple[str, str], ...]) -> None:
        self._pairs = pairs

    def _details(self, details: Any) -> Any:
        return details._replace(metadata=[*(details.metadata or ()), *self._pairs])

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_stream_unary(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)

    def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)


def aio_channel(
    target: str, idempotent: Mapping[str, Iterable[str]], plane: InternalPlane | None = None
) -> grpc.aio.Channel:
    """An asyncio channel to `target` (host:port or unix:path) that carries `plane`'s credential."""
    plane = plane or InternalPlane()
    kinds = (_AioUnaryUnary, _AioUnaryStream, _AioStreamUnary, _AioStreamStream)
    interceptors = [kind(plane.metadata()) for kind in kinds] if plane.token else None
    credentials = plane.channel_credentials()
    if credentials is not None:
        return grpc.aio.secure_channel(target, credentials, options=_options(idempotent), interceptors=interceptors)
    return grpc.aio.insecure_channel(target, options=_options(idempotent), interceptors=interceptors)


def sync_channel(
    target: str, idempotent: Mapping[str, Iterable[str]], plane: InternalPlane | None = None
) -> grpc.Channel:
    """A blocking channel (CLI, workers) with the same retry policy and credential."""
    plane = plane or InternalPlane()
    credentials = plane.channel_credentials()
    channel = (
        grpc.secure_channel(target, credentials, options=_options(idempotent))
        if credentials is not None
        else grpc.insecure_channel(target, options=_options(idempotent))
    )
    return grpc.intercept_channel(channel, _SyncCredential(plane.metadata())) if plane.token else channel
