"""Client channels with deadlines and retries for idempotent calls."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

import grpc
import grpc.aio

DEFAULT_DEADLINE_SECONDS = 30.0


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


def aio_channel(target: str, idempotent: Mapping[str, Iterable[str]]) -> grpc.aio.Channel:
    """An asyncio channel to `target` (host:port or unix:path)."""
    return grpc.aio.insecure_channel(target, options=_options(idempotent))


def sync_channel(target: str, idempotent: Mapping[str, Iterable[str]]) -> grpc.Channel:
    """A blocking channel (CLI, workers) with the same retry policy."""
    return grpc.insecure_channel(target, options=_options(idempotent))
