"""Tracing is configured by the standard OTEL_* variables and is off without an endpoint (issue 50).

Each case runs in a process of its own: a tracer provider is set once per process, and the other tests here must
keep running untraced."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = """
import json, logging, sys
from opentelemetry import trace
from jarvis.common import tracing
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
on = tracing.configure("jarvis-probe", json.loads(sys.argv[1]))
provider = trace.get_tracer_provider()
resource = getattr(provider, "resource", None)
print(json.dumps({
    "on": on,
    "enabled": tracing.enabled(),
    "provider": type(provider).__module__,
    "service": resource.attributes.get("service.name") if resource is not None else None,
}))
"""


def probe(env: dict[str, str]) -> tuple[dict[str, object], str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(env)], capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(done.stdout), done.stderr


def test_without_an_endpoint_nothing_is_installed() -> None:
    seen, _ = probe({})
    assert seen["on"] is False
    assert seen["enabled"] is False
    assert "sdk" not in str(seen["provider"])


def test_an_endpoint_turns_it_on_under_the_services_name() -> None:
    seen, _ = probe({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
    assert (seen["on"], seen["enabled"]) == (True, True)
    assert str(seen["provider"]).startswith("opentelemetry.sdk.trace")
    assert seen["service"] == "jarvis-probe"


def test_otel_service_name_wins() -> None:
    env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:9/v1/traces", "OTEL_SERVICE_NAME": "team-jarvis"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(env)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={"PATH": "/usr/bin:/bin", "OTEL_SERVICE_NAME": "team-jarvis"},
    )
    assert json.loads(done.stdout)["service"] == "team-jarvis"


def test_a_protocol_jarvis_does_not_ship_leaves_it_off_and_says_why() -> None:
    seen, logged = probe({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    assert seen["on"] is False
    assert "http/protobuf" in logged
    assert "grpc" in logged


CARRIED = """
import json, sys
from opentelemetry import trace
from jarvis.common import tracing
tracing.configure("jarvis-probe", json.loads(sys.argv[1]))
seen = {"outside": tracing.environment()}
with tracing.span("spawn") as spawn:
    seen["environment"] = tracing.environment()
    seen["spawn"] = [f"{spawn.get_span_context().trace_id:032x}", f"{spawn.get_span_context().span_id:016x}"]
    carried = tracing.carrier()
with tracing.continued("run", {**carried, "other": b"bytes are skipped"}):
    current = trace.get_current_span().get_span_context()
    seen["continued"] = [f"{current.trace_id:032x}", f"{trace.get_current_span().parent.span_id:016x}"]
print(json.dumps(seen))
"""


def test_the_context_is_carried_to_a_child_process_and_a_queued_task() -> None:
    """TRACEPARENT for an agent's process, W3C fields for a task, and the task's span the child of the sender's."""
    on = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_BSP_SCHEDULE_DELAY": "60000"}
    done = subprocess.run(
        [sys.executable, "-c", CARRIED, json.dumps(on)], capture_output=True, text=True, timeout=60, check=True
    )
    seen = json.loads(done.stdout)
    trace_id, span_id = seen["spawn"]
    assert seen["outside"] == {}
    assert seen["environment"]["TRACEPARENT"].startswith(f"00-{trace_id}-{span_id}-")
    assert seen["continued"] == [trace_id, span_id]


def test_off_nothing_is_carried() -> None:
    off = subprocess.run(
        [sys.executable, "-c", "from jarvis.common import tracing; print(tracing.environment(), tracing.carrier())"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert off.stdout.strip() == "{} {}"


INCOMING = """
import json, sys
from opentelemetry import trace
from jarvis.common import tracing
tracing.configure("jarvis-probe", json.loads(sys.argv[1]))
header = [(b"traceparent", b"00-" + b"1" * 32 + b"-" + b"2" * 16 + b"-01")]
minted = tracing.fields({"traceparent": "00-" + "3" * 32 + "-" + "4" * 16 + "-01", "token": "jva_x", "tracestate": 1})
def parent(headers, fallback):
    with tracing.incoming(headers, fallback), tracing.span("request") as span:
        return [f"{span.get_span_context().trace_id:032x}", f"{span.parent.span_id:016x}" if span.parent else ""]
print(json.dumps({
    "minted": minted,
    "unreadable": [tracing.fields(None), tracing.fields(["traceparent"])],
    "header wins": parent(header, minted),
    "credential": parent([], minted),
    "neither": parent([], {})[1],
}))
"""


def test_a_request_naming_no_trace_joins_the_one_its_credential_was_minted_in() -> None:
    """An agent's call with no traceparent of its own is the child of the span its credential names (decision 0066);
    a traceparent header the caller sent wins; only the W3C fields of a stored record are read."""
    on = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_BSP_SCHEDULE_DELAY": "60000"}
    done = subprocess.run(
        [sys.executable, "-c", INCOMING, json.dumps(on)], capture_output=True, text=True, timeout=60, check=True
    )
    seen = json.loads(done.stdout)
    assert set(seen["minted"]) == {"traceparent"}
    assert seen["unreadable"] == [{}, {}]
    assert seen["header wins"] == ["1" * 32, "2" * 16]
    assert seen["credential"] == ["3" * 32, "4" * 16]
    assert seen["neither"] == ""


UNSAMPLED = """
import json, sys
from jarvis.common import tracing
tracing.configure("jarvis-probe", json.loads(sys.argv[1]))
remote = [(b"traceparent", b"00-" + b"5" * 32 + b"-" + b"6" * 16 + b"-00")]
with tracing.span("root") as root, tracing.span("step") as step:
    dropped = step is root and not root.get_span_context().trace_flags.sampled
with tracing.incoming(remote), tracing.span("request") as request:
    asked = request.get_span_context().span_id != int("6" * 16, 16)
print(json.dumps({"dropped root's step is no span": dropped, "remote unsampled parent still asks": asked}))
"""


def test_a_trace_this_process_dropped_opens_no_step_spans() -> None:
    """Under a root span this process's sampler dropped, a step is no new span (it would be dropped too, at the cost of
    a kept one); under a caller's unsampled parent the sampler is still asked, for a span of its own."""
    off_by_ratio = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
        "OTEL_BSP_SCHEDULE_DELAY": "60000",
        "OTEL_TRACES_SAMPLER": "traceidratio",
        "OTEL_TRACES_SAMPLER_ARG": "0",
    }
    done = subprocess.run(
        [sys.executable, "-c", UNSAMPLED, json.dumps(off_by_ratio)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, **off_by_ratio},
    )
    assert json.loads(done.stdout) == {
        "dropped root's step is no span": True,
        "remote unsampled parent still asks": True,
    }
