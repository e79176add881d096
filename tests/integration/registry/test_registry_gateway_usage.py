"""The aggregator's registry gateway ships a batch of usage to a real registry: every event, every audit field."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.views.registry import UsageEventRecord
from jarvis.common import latency_bins
from jarvis.common.errors import InvalidArgument
from jarvis.common.grpc_server import create_server
from jarvis.registry.app import Registry
from jarvis.registry.server import registry_bindings

pytestmark = pytest.mark.anyio

EVENTS = 1000  # several of the gateway's turns of the event loop, and a partial last one


async def test_a_batch_arrives_whole_with_its_audit_fields(registry: Registry, tmp_path: Path) -> None:
    running = create_server(registry_bindings(registry, [tmp_path]), "127.0.0.1:0")
    gateway = RegistryGateway(f"127.0.0.1:{running.port}")
    began = time.time_ns()
    records = [
        UsageEventRecord(
            "jarvis_server",
            "list",
            ok=i % 10 != 0,
            latency_ms=float(i),
            at_ns=began + i * 1000,
            token_id="t1",
            token_name="ci-bot",
            surface="jarvis",
            target=f"server-{i}",
            outcome="ok" if i % 10 else "error",
            arguments_json=json.dumps({"call": i}),
        )
        for i in range(EVENTS)
    ]
    try:
        await gateway.record_usage(iter(records))  # any iterable: the recorder hands over a lazy map
    finally:
        await gateway.close()
        running.stop(0)
    [stat] = registry.usage.stats("jarvis_server")
    assert (stat.calls, stat.errors, stat.max_latency_ms) == (EVENTS, EVENTS // 10, EVENTS - 1)
    entries = registry.usage.audit(limit=EVENTS)
    assert len(entries) == EVENTS
    by_target = {entry.event.target: entry.event for entry in entries}
    last = by_target[f"server-{EVENTS - 1}"]
    assert json.loads(last.arguments_json) == {"call": EVENTS - 1}
    assert (last.token_id, last.token_name, last.surface, last.outcome) == ("t1", "ci-bot", "jarvis", "ok")
    assert last.at == datetime.fromtimestamp((began + (EVENTS - 1) * 1000) // 1000 / 1e6, UTC)
    assert by_target["server-10"].outcome == "error"


async def test_usage_over_time_counts_each_hour_tool_and_target_with_its_latencies(
    registry: Registry, tmp_path: Path
) -> None:
    """The Usage page's query, through the gateway: calls per hour, tool and target, the errors among them, and a
    histogram from which the p95 reads within 5 %; calls before `since` are left out."""
    running = create_server(registry_bindings(registry, [tmp_path]), "127.0.0.1:0")
    gateway = RegistryGateway(f"127.0.0.1:{running.port}")
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=2)

    def call(hour: int, target: str, latency: float, outcome: str = "ok") -> UsageEventRecord:
        at = start + timedelta(hours=hour, minutes=5)
        return UsageEventRecord(
            "notes__search", "", outcome == "ok", latency, int(at.timestamp() * 1e9),
            token_name="alice", surface="profile", target=target, outcome=outcome,
        )  # fmt: skip

    latencies = [float(ms) for ms in range(1, 101)]
    events = [call(0, "notes", ms) for ms in latencies]
    events += [call(1, "notes", 5.0, "error"), call(1, "wiki", 7.0), call(-1, "notes", 1.0)]
    try:
        await gateway.record_usage(iter(events))
        buckets = await gateway.usage_over_time(start, 3600)
        with pytest.raises(InvalidArgument, match="bucket_seconds"):
            await gateway.usage_over_time(start, 10)
    finally:
        await gateway.close()
        running.stop(0)
    got = {(b.start[:13], b.target): b for b in buckets}
    first, second = start.isoformat()[:13], (start + timedelta(hours=1)).isoformat()[:13]
    assert set(got) == {(first, "notes"), (second, "notes"), (second, "wiki")}
    assert (got[first, "notes"].calls, got[first, "notes"].errors) == (100, 0)
    assert (got[second, "notes"].calls, got[second, "notes"].errors) == (1, 1)
    p95 = latency_bins.percentile(got[first, "notes"].latency_bins, 0.95)
    assert 95.0 <= p95 <= 95.0 * latency_bins.RATIO
