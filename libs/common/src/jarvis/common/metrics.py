"""Prometheus metrics for gRPC methods. Labels are bounded sets (service, method, code): never ids."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class GrpcMetrics:
    """Calls, latency and status codes of every gRPC method a process serves."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.calls = Counter(
            "jarvis_grpc_server_handled",
            "gRPC calls handled, by service, method and status code.",
            ["grpc_service", "grpc_method", "grpc_code"],
            registry=registry,
        )
        self.latency = Histogram(
            "jarvis_grpc_server_handling_seconds",
            "Time to handle a gRPC call.",
            ["grpc_service", "grpc_method"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
