"""Egress proxy throughput: one agent streaming a long answer through the proxy vs a direct loopback connection.

A fake model API on the host's loopback streams an answer two ways: bulk (64 KiB writes) and as an SSE
stream of small events (each flushed, as a model API streams tokens). The same client (busybox wget)
reads it
  - directly on the host over loopback (the baseline, no proxy), and
  - from inside a `--network none` project container, through the egress bridge (socat), the project's
    unix socket and the runtime's proxy (HTTP_PROXY), as an agent does.
Both run in the same process against the same upstream. A container exec has a fixed cost (measured as
`true` and subtracted; printed too).

Run: eval "$(scripts/dockerd)" && .venv/bin/python bench/egress.py   (BENCH_MB=64, BENCH_EVENTS=20000)
"""

from __future__ import annotations

import http.server
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from jarvis.runtime.app import Runtime  # noqa: E402
from tests.support.docker_env import docker_client, egress_agent_image, remove_instance  # noqa: E402
from tests.support.runtime_service import runtime_settings  # noqa: E402

MB = int(os.environ.get("BENCH_MB", "64"))
EVENTS = int(os.environ.get("BENCH_EVENTS", "20000"))
EVENT = b"data: " + b'{"type":"content_block_delta","delta":{"type":"text_delta","text":"' + b"x" * 120 + b'"}}\n\n'
ROUNDS = 5


class Upstream(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self) -> None:
        if self.path.startswith("/bulk"):
            chunk, count = b"y" * 65536, MB * 16
        else:
            chunk, count = EVENT, EVENTS
        self.send_response(200)
        self.send_header("Content-Length", str(len(chunk) * count))
        self.end_headers()
        for _ in range(count):
            self.wfile.write(chunk)
            self.wfile.flush()

    def log_message(self, format: str, *args: object) -> None:
        return


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    busybox = shutil.which("busybox")
    if busybox is None:
        sys.exit("busybox is needed for the direct baseline: apt-get install busybox-static")
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    port = upstream.server_address[1]
    engine = docker_client()
    with tempfile.TemporaryDirectory() as tmp:
        settings = runtime_settings(
            Path(tmp) / "rt",
            egress_agent_image(engine),
            memory="512m",
            egress_resolve={"api.fake.test": ["127.0.0.1"]},
            egress_internal_hosts=["api.fake.test"],
        )
        runtime = Runtime.open(settings)
        try:
            project = runtime.projects.create("bench", "", "", [], "", False, [f"api.fake.test:{port}"])
            runtime.containers.start(project.id)

            def in_container(command: str) -> float:
                result = runtime.containers.exec(project.id, [], command, "", 300, 0)
                if result.exit_code != 0:
                    raise RuntimeError(f"{command}: {result.stderr or result.stdout}")
                return result.duration_ms / 1000

            def direct(path: str) -> float:
                started = time.perf_counter()
                subprocess.run(
                    [busybox, "wget", "-q", "-O", "/dev/null", f"http://127.0.0.1:{port}{path}"],
                    check=True,
                    env={"PATH": "/usr/bin:/bin"},
                )
                return time.perf_counter() - started

            overhead = statistics.median(in_container("true") for _ in range(ROUNDS))
            print(f"container exec of `true` (subtracted below): {overhead * 1000:.1f} ms")
            for label, path, size in (("bulk", "/bulk", MB * 16 * 65536), ("sse", "/sse", EVENTS * len(EVENT))):
                direct_s = [direct(path) for _ in range(ROUNDS)]
                proxied = [
                    max(in_container(f"wget -q -O /dev/null http://api.fake.test:{port}{path}") - overhead, 1e-6)
                    for _ in range(ROUNDS)
                ]
                rate = size / 1e6
                d, p = statistics.median(direct_s), statistics.median(proxied)
                print(
                    f"{label:<5} {size / 1e6:7.1f} MB   direct loopback {rate / d:8.1f} MB/s ({d * 1000:7.1f} ms)   "
                    f"through the egress proxy {rate / p:8.1f} MB/s ({p * 1000:7.1f} ms)   "
                    f"proxy/direct {d / p:5.2f}"
                )
            if label == "sse":
                print(f"sse: {EVENTS} events of {len(EVENT)} B, {EVENTS / p:,.0f} events/s through the proxy")
        finally:
            runtime.close()
            remove_instance(engine, settings.instance)
            upstream.shutdown()


if __name__ == "__main__":
    main()
