"""Prometheus metrics of every process: the two kinds they declare, and the gRPC methods a service serves.

Labels are bounded sets (service, method, code; surface, tool, outcome…): never ids.
"""

from __future__ import annotations

from collections.abc import Sequence

from prometheus_client import CollectorRegistry, Counter, Histogram

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def counter(registry: CollectorRegistry, name: str, documentation: str, labels: Sequence[str]) -> Counter:
    """A count of events by `labels`, in `registry`."""
    return Counter(name, documentation, list(labels), registry=registry)


def latency(registry: CollectorRegistry, name: str, documentation: str, labels: Sequence[str]) -> Histogram:
    """Durations in seconds by `labels`, in `registry`, with the buckets every call latency shares (1 ms to 30 s)."""
    return Histogram(name, documentation, list(labels), buckets=LATENCY_BUCKETS, registry=registry)


class GrpcMetrics:
    """Calls, latency and status codes of every gRPC method a process serves."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.calls = counter(
            registry,
            "jarvis_grpc_server_handled",
            "gRPC calls handled, by service, method and status code.",
            ["grpc_service", "grpc_method", "grpc_code"],
        )
        self.latency = latency(
            registry,
            "jarvis_grpc_server_handling_seconds",
            "Time to handle a gRPC call.",
            ["grpc_service", "grpc_method"],
        )
