"""Aggregator metrics. Labels come from bounded sets (surface, tool, action, outcome, installed server), never ids."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, ProcessCollector

from jarvis.common.metrics import counter, latency


class AggregatorMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        # The aggregator serves its own registry, not the default one: add the process's CPU, memory and fds,
        # as the standalone services' default registry has them.
        ProcessCollector(registry=registry)
        self.tool_calls = counter(
            registry,
            "jarvis_mcp_tool_calls",
            "MCP tool calls by surface, tool, action and outcome (ok, error, denied, internal).",
            ["surface", "tool", "action", "outcome"],
        )
        self.tool_latency = latency(
            registry, "jarvis_mcp_tool_call_seconds", "Time to answer an MCP tool call.", ["surface", "tool"]
        )
        self.auth_failures = counter(
            registry,
            "jarvis_auth_failures",
            "Requests refused by authentication or authorization, by reason.",
            ["reason"],
        )
        # The server label is an installed server's name (admins install them: a bounded set) or OTHER_SERVER.
        self.downstream_calls = counter(
            registry,
            "jarvis_downstream_calls",
            "Tool calls forwarded to downstream servers, by server and outcome (ok, error).",
            ["server", "outcome"],
        )
        self.downstream_latency = latency(
            registry,
            "jarvis_downstream_call_seconds",
            "Time a downstream server took to answer a forwarded tool call.",
            ["server"],
        )
        self.rate_limited = counter(
            registry,
            "jarvis_rate_limited",
            "Tool calls refused by a per-token rate limit, by surface and reason (rate, concurrency).",
            ["surface", "reason"],
        )
        # Which calls skipped the SDK's per-request machinery (direct_calls.py): a fall in this share shows clients
        # whose requests need the SDK (progress, sessions, SSE) or a path that stopped taking calls.
        self.direct_tool_calls = counter(
            registry,
            "jarvis_direct_tool_calls",
            "Tool calls answered without the MCP SDK's per-request server machinery, by surface.",
            ["surface"],
        )
        self.http_requests = counter(
            registry, "jarvis_http_requests", "HTTP requests by route group and status class.", ["route", "status"]
        )

    def downstream_call(self, surface: str, server: str, outcome: str, elapsed: float) -> None:
        """One forwarded tool call. `server` must already be bounded (`DownstreamHost.server_label`)."""
        self.tool_calls.labels(surface, "downstream", "", outcome).inc()
        self.tool_latency.labels(surface, "downstream").observe(elapsed)
        self.downstream_calls.labels(server, outcome).inc()
        self.downstream_latency.labels(server).observe(elapsed)
