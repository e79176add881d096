"""Downstream metrics: a server that never starts is counted, and call labels stay within the installed servers."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import cast

import pytest
from prometheus_client import CollectorRegistry

from jarvis.aggregator.calls.record import OTHER_SERVER
from jarvis.aggregator.downstream.hosting.host import DownstreamHost
from jarvis.aggregator.downstream.hosting.metrics import register
from jarvis.aggregator.downstream.hosting.supervisor import HostOptions, ServerHost
from jarvis.aggregator.downstream.hosting.tools import ServedTools
from jarvis.aggregator.downstream.transport.connection import Connection, LaunchPlan
from jarvis.aggregator.downstream.transport.stdio import StdioSpec
from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.metrics import AggregatorMetrics

pytestmark = pytest.mark.anyio


async def _no_tools(_host: ServerHost, _connection: Connection) -> ServedTools:
    return ServedTools()


def _host(tmp_path: Path) -> DownstreamHost:
    return DownstreamHost(
        cast(RegistryGateway, None), HostOptions(init_timeout=2), project_root=tmp_path, max_message_bytes=1 << 20
    )


async def test_a_server_that_fails_at_start_is_counted(tmp_path: Path) -> None:
    host = _host(tmp_path)
    spec = LaunchPlan(
        "broken", "stdio", stdio=StdioSpec(server="broken", command=sys.executable, args=("-c", "raise SystemExit(3)"))
    )
    server = ServerHost("broken", spec, host.options, _no_tools, lambda _name, _lists: None)
    host.hosts["broken"] = server
    registry = CollectorRegistry()
    register(host, registry)
    server.start_eagerly()
    try:
        for _ in range(100):
            if server.snapshot().start_failures >= 1:
                break
            await asyncio.sleep(0.05)
    finally:
        await server.stop()
    assert server.restarts == 0  # it never ran, so it never "stopped while running"
    assert "exited with code 3" in server.last_error
    counted = registry.get_sample_value("jarvis_downstream_server_start_failures_total", {"server": "broken"})
    assert counted is not None
    assert counted >= 1


def test_call_labels_are_bounded_by_the_installed_servers(tmp_path: Path) -> None:
    host = _host(tmp_path)
    host.hosts["clock"] = cast(ServerHost, object())
    registry = CollectorRegistry()
    metrics = AggregatorMetrics(registry)
    for name in ("clock", "not-installed-1", "not-installed-2", "x" * 500):
        metrics.downstream_call("profile", host.server_label(name), "ok", 0.01)
    servers = {s.labels["server"] for f in registry.collect() if f.name == "jarvis_downstream_calls" for s in f.samples}
    assert servers == {"clock", OTHER_SERVER}
    assert registry.get_sample_value("jarvis_downstream_calls_total", {"server": OTHER_SERVER, "outcome": "ok"}) == 3
    assert (
        registry.get_sample_value(
            "jarvis_mcp_tool_calls_total", {"surface": "profile", "tool": "downstream", "action": "", "outcome": "ok"}
        )
        == 4
    )
