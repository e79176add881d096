"""Client channels with deadlines and retries for idempotent calls."""

from __future__ import annotations

import json
from collections.abc import Iterable

import grpc
import grpc.aio

DEFAULT_DEADLINE_SECONDS = 30.0


def _service_config(service: str, idempotent_methods: Iterable[str]) -> str:
    """Retry UNAVAILABLE (a restarting peer) for idempotent methods only; writes are never replayed."""
    return json.dumps(
        {
            "methodConfig": [
                {
                    "name": [{"service": service, "method": m} for m in idempotent_methods],
                    "retryPolicy": {
                        "maxAttempts": 4,
                        "initialBackoff": "0.1s",
                        "maxBackoff": "2s",
                        "backoffMultiplier": 2,
                        "retryableStatusCodes": ["UNAVAILABLE"],
                    },
                },
                {"name": [{"service": service}], "timeout": f"{DEFAULT_DEADLINE_SECONDS}s"},
            ]
        }
    )


def aio_channel(target: str, service: str, idempotent_methods: Iterable[str]) -> grpc.aio.Channel:
    """An asyncio channel to `target` (host:port or unix:path) for one service."""
    return grpc.aio.insecure_channel(
        target,
        options=[
            ("grpc.enable_retries", 1),
            ("grpc.service_config", _service_config(service, idempotent_methods)),
            ("grpc.max_receive_message_length", 16 * 1024 * 1024),
        ],
    )


def sync_channel(target: str, service: str, idempotent_methods: Iterable[str]) -> grpc.Channel:
    """A blocking channel (CLI, workers) with the same retry policy."""
    return grpc.insecure_channel(
        target,
        options=[
            ("grpc.enable_retries", 1),
            ("grpc.service_config", _service_config(service, idempotent_methods)),
            ("grpc.max_receive_message_length", 16 * 1024 * 1024),
        ],
    )
