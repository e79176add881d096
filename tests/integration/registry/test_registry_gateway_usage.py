"""The aggregator's registry gateway ships a batch of usage to a real registry: every event, every audit field."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.views.registry import UsageEventRecord
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
