"""`python -m jarvis.cli.probe`, the healthcheck compose runs inside each container, against real servers."""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent import futures

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from tests.support.stack import free_port


def _probe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jarvis.cli.probe", *args], capture_output=True, text=True, timeout=30, check=False
    )


@pytest.fixture
def grpc_health() -> Iterator[tuple[str, health.HealthServicer]]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}", servicer
    server.stop(None)


def test_grpc_probe_follows_the_health_status(grpc_health: tuple[str, health.HealthServicer]) -> None:
    target, servicer = grpc_health
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    assert _probe("grpc", target).returncode == 0
    servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    down = _probe("grpc", target)
    assert down.returncode == 1
    assert f"{target}: NOT_SERVING" in down.stderr
    nothing = _probe("grpc", f"127.0.0.1:{free_port()}")
    assert nothing.returncode == 1
    assert "UNAVAILABLE" in nothing.stderr


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/readyz" else 503)
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


def test_http_probe_wants_a_2xx() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        assert _probe("http", f"{base}/readyz").returncode == 0
        down = _probe("http", f"{base}/other")
        assert down.returncode == 1
        assert "HTTP 503" in down.stderr
        assert _probe("http", "file:///etc/passwd").returncode != 0
    finally:
        server.shutdown()
        server.server_close()
