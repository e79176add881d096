"""Client channels with deadlines, retries for idempotent calls, and the internal plane's credential."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import grpc
import grpc.aio

from jarvis.common.internal_plane import InternalPlane

# A backstop for a call whose caller set no deadline. Callers size their own (a few seconds for a read,
# minutes for an import); this only keeps a forgotten one from waiting forever on a hung peer.
DEFAULT_DEADLINE_SECONDS = 120.0


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


def _with_credential(details: Any, pairs: tuple[tuple[str, str], ...]) -> Any:
    return details._replace(metadata=grpc.aio.Metadata(*(details.metadata or ()), *pairs))


class _AioCredential(grpc.aio.UnaryUnaryClientInterceptor, grpc.aio.UnaryStreamClientInterceptor,  # type: ignore[misc]
                     grpc.aio.StreamUnaryClientInterceptor, grpc.aio.StreamStreamClientInterceptor):  # type: ignore[misc]
    """Adds the service credential to every call of an asyncio channel, whatever its kind."""

    def __init__(self, pairs: tuple[tuple[str, str], ...]) -> None:
        self._pairs = pairs

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(_with_credential(details, self._pairs), request)

    async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(_with_credential(details, self._pairs), request)

    async def intercept_stream_unary(self, continuation: Any, details: Any, requests: Any) -> Any:
        return await continuation(_with_credential(details, self._pairs), requests)

    async def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        return await continuation(_with_credential(details, self._pairs), requests)


class _SyncCredential(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,  # type: ignore[misc]
                      grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):  # type: ignore[misc]
    """The same for a blocking channel."""

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


def aio_channel(target: str, idempotent: Mapping[str, Iterable[str]],
                plane: InternalPlane | None = None) -> grpc.aio.Channel:
    """An asyncio channel to `target` (host:port or unix:path) that carries `plane`'s credential."""
    plane = plane or InternalPlane()
    interceptors = [_AioCredential(plane.metadata())] if plane.token else None
    credentials = plane.channel_credentials()
    if credentials is not None:
        return grpc.aio.secure_channel(target, credentials, options=_options(idempotent), interceptors=interceptors)
    return grpc.aio.insecure_channel(target, options=_options(idempotent), interceptors=interceptors)


def sync_channel(target: str, idempotent: Mapping[str, Iterable[str]],
                 plane: InternalPlane | None = None) -> grpc.Channel:
    """A blocking channel (CLI, workers) with the same retry policy and credential."""
    plane = plane or InternalPlane()
    credentials = plane.channel_credentials()
    channel = (grpc.secure_channel(target, credentials, options=_options(idempotent)) if credentials is not None
               else grpc.insecure_channel(target, options=_options(idempotent)))
    return grpc.intercept_channel(channel, _SyncCredential(plane.metadata())) if plane.token else channel
