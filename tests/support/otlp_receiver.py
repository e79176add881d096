"""A real OTLP/HTTP trace receiver for tests: `POST /v1/traces` with a protobuf `ExportTraceServiceRequest`, decoded
with `opentelemetry-proto`, kept as plain spans. Nothing about the exporter is faked: Jarvis's own SDK exporter sends
to it over loopback."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    kind: int
    attributes: dict[str, Any]
    status_code: int
    status_message: str
    start_ns: int = 0
    end_ns: int = 0
    links: tuple[tuple[str, str], ...] = ()  # (trace id, span id) of each span this one links to


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


@dataclass
class Receiver:
    url: str
    spans: list[ReceivedSpan] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, request: ExportTraceServiceRequest) -> None:
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    received = ReceivedSpan(
                        str(resource.get("service.name", "")),
                        span.trace_id.hex(),
                        span.span_id.hex(),
                        span.parent_span_id.hex(),
                        span.name,
                        span.kind,
                        {a.key: _value(a.value) for a in span.attributes},
                        span.status.code,
                        span.status.message,
                        span.start_time_unix_nano,
                        span.end_time_unix_nano,
                        tuple((link.trace_id.hex(), link.span_id.hex()) for link in span.links),
                    )
                    with self.lock:
                        self.spans.append(received)

    def trace(self, trace_id: str) -> list[ReceivedSpan]:
        with self.lock:
            return [s for s in self.spans if s.trace_id == trace_id]

    def linking_to(self, span: ReceivedSpan, timeout: float = 20.0) -> ReceivedSpan:
        """The first span received that links to `span` (work done later on its behalf, as a batch's)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                found = [s for s in self.spans if (span.trace_id, span.span_id) in s.links]
            if found:
                return found[0]
            time.sleep(0.1)
        raise AssertionError(f"no span linking to {span.name} ({span.span_id}) within {timeout}s")

    def wait_for(
        self, found: Callable[[list[ReceivedSpan]], bool], trace_id: str, timeout: float = 20.0
    ) -> list[ReceivedSpan]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            spans = self.trace(trace_id)
            if found(spans):
                return spans
            time.sleep(0.1)
        raise AssertionError(
            f"trace {trace_id} not complete within {timeout}s: {[s.name for s in self.trace(trace_id)]}"
        )


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    receiver: Receiver

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces":
                self.send_error(404)
                return
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            receiver.take(request)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver = Receiver(f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


def main() -> None:
    """`python -m tests.support.otlp_receiver`: serve until stdin closes, printing the URL first and the number of
    spans received last (a benchmark runs it apart, so decoding spans costs its own process, not the callers')."""
    import sys

    with otlp_receiver() as receiver:
        print(receiver.url, flush=True)
        sys.stdin.read()
        print(len(receiver.spans), flush=True)


if __name__ == "__main__":
    main()
