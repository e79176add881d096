"""The call pipeline's spans (issue 50): a step has a span only where it took time of its own or refused the call.

Runs in a process of its own, as tests/unit/common/test_tracing.py does: the tracer provider is set once per process.
The SDK's provider is the one `tracing.configure` installs; its spans are read back through the SDK's in-memory
exporter, added beside the OTLP one (whose endpoint, a discard port on loopback, is never reached: its batch waits
ten minutes and the process leaves first)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from jarvis.aggregator.calls.call import ToolCall
from jarvis.aggregator.calls.pipeline import CallPipeline, Consent, Scope, Withheld
from jarvis.aggregator.calls.record import CallRecorder
from jarvis.aggregator.calls.routes import Proceed, Route
from jarvis.aggregator.metrics import AggregatorMetrics
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.usage import UsageRecorder
from jarvis.common import tracing
from tests.unit.aggregator.test_call_pipeline import QUARANTINED, Sink, downstream

ROOT = Path(__file__).resolve().parents[3]

PROBE = """
import asyncio, json, os, sys
from opentelemetry import trace
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from jarvis.common import tracing
assert tracing.configure("jarvis-probe")
kept = InMemorySpanExporter()
trace.get_tracer_provider().add_span_processor(SimpleSpanProcessor(kept))
from tests.unit.aggregator.test_call_pipeline_spans import calls
asyncio.run(calls())
spans = [
    {"name": s.name, "id": s.context.span_id, "parent": s.parent.span_id if s.parent else None,
     "status": s.status.description, "took": s.end_time - s.start_time}
    for s in kept.get_finished_spans()
]
print(json.dumps(spans))
sys.stdout.flush()
os._exit(0)
"""

WAIT_SECONDS = 0.005


class Waits:
    """A step that takes time of its own before it runs the rest (as a consent the caller waits for does)."""

    name = "waits"

    async def __call__(self, call: ToolCall, route: Route, proceed: Proceed) -> Any:
        await asyncio.sleep(WAIT_SECONDS)
        return await proceed(call)


async def calls() -> None:
    """Three calls, each under a root span of its own: one that runs, one the withheld step refuses after the wait,
    and one the scope step refuses before it."""
    pipeline = CallPipeline(
        CallRecorder(UsageRecorder(Sink()), AggregatorMetrics(CollectorRegistry())),
        (Scope(), Waits(), Withheld(), Consent()),
    )
    allowed, narrow = Principal("t", "t", ("servers:notes",)), Principal("n", "n", ("read",))
    for name, principal, route in (
        ("runs", allowed, downstream("read")),
        ("withheld", allowed, downstream("wipe", withheld=QUARANTINED)),
        ("denied", narrow, downstream("read")),
    ):
        with tracing.span(name):
            await pipeline.run(ToolCall(principal, "profile", route.tool, {}), route)


def traced_calls() -> dict[str, list[dict[str, Any]]]:
    """Each root's spans, as (name, parent's name, status), with how long the `waits` span took."""
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
        "OTEL_BSP_SCHEDULE_DELAY": "600000",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True, env=env, cwd=ROOT
    )
    spans = json.loads(done.stdout)
    by_id = {s["id"]: s for s in spans}

    def root(span: dict[str, Any]) -> dict[str, Any]:
        return span if span["parent"] is None else root(by_id[span["parent"]])

    trees: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        if span["parent"] is not None:
            parent = by_id[span["parent"]]["name"]
            trees.setdefault(root(span)["name"], []).append({**span, "parent": parent})
    return trees


def test_only_a_step_that_took_time_or_refused_has_a_span() -> None:
    trees = traced_calls()
    shape = {root: sorted((s["name"], s["parent"], s["status"]) for s in spans) for root, spans in trees.items()}
    assert shape == {
        # The quick checks (scope, withheld, consent) are no spans; the backend runs in the wait's span.
        "runs": [
            ("backend notes", "waits", None),
            ("call notes__read", "runs", None),
            ("waits", "call notes__read", None),
        ],
        # The step that refused has its span, its status the outcome, after the wait's.
        "withheld": [
            ("call notes__wipe", "withheld", "withheld"),
            ("waits", "call notes__wipe", None),
            ("withheld", "waits", "withheld"),
        ],
        # Refused before the wait: no wait, and the scope's span says why.
        "denied": [("call notes__read", "denied", "denied"), ("scope", "call notes__read", "denied")],
    }
    # The wait's span began when the step did, though opened once its time was known: it holds the whole wait.
    waited = [s["took"] for spans in trees.values() for s in spans if s["name"] == "waits"]
    assert all(took >= WAIT_SECONDS * 1e9 for took in waited), waited
