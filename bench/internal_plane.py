"""What the internal plane's credential costs a call: a registry read over real loopback gRPC, served open
(the baseline) and behind the credential interceptor (client and server side), measured in the same run.

    .venv/bin/python bench/internal_plane.py [--calls N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.api.registry.v1 import registry_pb2_grpc as pb_grpc
from jarvis.common.grpc_client import sync_channel
from jarvis.common.internal_plane import InternalPlane
from jarvis.common.service import launch
from jarvis.registry import server as registry_server
from jarvis.registry.settings import RegistrySettings


def measure(plane: InternalPlane, calls: int) -> tuple[float, float]:
    """Median and p99 microseconds of a ListTokens call."""
    with tempfile.TemporaryDirectory() as tmp:
        settings = RegistrySettings(data_dir=Path(tmp), home=Path(tmp))
        server = launch(registry_server.build, settings, "127.0.0.1:0", plane=plane)
        channel = sync_channel(f"127.0.0.1:{server.port}", {}, plane)
        stub = pb_grpc.RegistryServiceStub(channel)
        try:
            for _ in range(min(200, calls)):  # warm up: connection, caches
                stub.ListTokens(pb.ListTokensRequest(), timeout=10)
            times = []
            for _ in range(calls):
                started = time.perf_counter()
                stub.ListTokens(pb.ListTokensRequest(), timeout=10)
                times.append(time.perf_counter() - started)
        finally:
            channel.close()
            server.stop(0)
    return statistics.median(times) * 1e6, statistics.quantiles(times, n=100)[98] * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=2000)
    calls = parser.parse_args().calls
    baseline = measure(InternalPlane(), calls)
    secured = measure(InternalPlane(token="x" * 64), calls)
    print(f"{'':<28}{'median us':>10}{'p99 us':>10}")
    print(f"{'open (baseline)':<28}{baseline[0]:>10.0f}{baseline[1]:>10.0f}")
    print(f"{'with the credential':<28}{secured[0]:>10.0f}{secured[1]:>10.0f}")
    print(f"overhead per call: {secured[0] - baseline[0]:+.0f} us median")


if __name__ == "__main__":
    main()
