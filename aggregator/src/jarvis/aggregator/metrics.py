"""Aggregator metrics. Label values come from bounded sets (surface, tool, action, outcome), never ids."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

from jarvis.common.metrics import LATENCY_BUCKETS


class AggregatorMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.tool_calls = Counter(
            "jarvis_mcp_tool_calls",
            "MCP tool calls by surface, tool, action and outcome (ok, error, denied, internal).",
            ["surface", "tool", "action", "outcome"],
            registry=registry,
        )
        self.tool_latency = Histogram(
            "jarvis_mcp_tool_call_seconds",
            "Time to answer an MCP tool call.",
            ["surface", "tool"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.auth_failures = Counter(
            "jarvis_auth_failures",
            "Requests refused by authentication or authorization, by reason.",
            ["reason"],
            registry=registry,
        )
        self.rate_limited = Counter(
            "jarvis_rate_limited",
            "Tool calls refused by a per-token rate limit, by surface and reason (rate, concurrency).",
            ["surface", "reason"],
            registry=registry,
        )
        self.http_requests = Counter(
            "jarvis_http_requests",
            "HTTP requests by route group and status class.",
            ["route", "status"],
            registry=registry,
        )
