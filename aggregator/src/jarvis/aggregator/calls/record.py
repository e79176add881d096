"""What every tool call leaves behind, written in one place: one audit record (with usage) and one count.

A call refused before it ran counts once too (outcome `denied`, `rate_limited`, `withheld`, `needs_consent`,
`needs_keys`), so every door's refusals show on the same dashboards; only a call that reached a downstream server
counts among that server's forwarded calls.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jarvis.aggregator import audit
from jarvis.aggregator.metrics import AggregatorMetrics
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.usage import UsageRecorder
from jarvis.common import tracing

OTHER_SERVER = "other"  # the metric label of any server that is not installed (DownstreamHost.server_label)
DOWNSTREAM_TOOL = "downstream"  # every downstream tool counts under this one tool label: the label set stays bounded
FORWARDED = frozenset({"ok", "error", "internal"})  # outcomes of a call a server was sent
# Every outcome a call is recorded with: those of a call that ran, then the refusals and what a person has to do
# first, which feed no error alert (what the audit's filters offer).
OUTCOMES = ("ok", "error", "internal", "denied", "rate_limited", "withheld", "needs_consent", "needs_keys")


def _other(server: str) -> str:
    return OTHER_SERVER


class CallRecorder:
    """Audit, usage and metrics of tool calls. `server_label` bounds a server name for a metric label."""

    def __init__(
        self, usage: UsageRecorder, metrics: AggregatorMetrics, server_label: Callable[[str], str] = _other
    ) -> None:
        self.usage = usage
        self.metrics = metrics
        self.server_label = server_label

    def record(
        self,
        principal: Principal,
        surface: str,
        tool: str,
        *,
        action: str = "",
        server: str = "",
        arguments: Mapping[str, Any] | None,
        schema: Mapping[str, Any] | None,
        outcome: str,
        elapsed: float = 0.0,
    ) -> None:
        """One call's record. `server` is set for a downstream server's tool, whose metrics count under
        `downstream` and its bounded server label; a Jarvis tool counts under its own name and action."""
        traced = tracing.exemplar()  # where traced, a slow bucket names a trace that landed in it
        if server:
            self.metrics.tool_calls.labels(surface, DOWNSTREAM_TOOL, "", outcome).inc()
            self.metrics.tool_latency.labels(surface, DOWNSTREAM_TOOL).observe(elapsed, traced)
            if outcome in FORWARDED:
                label = self.server_label(server)
                self.metrics.downstream_calls.labels(label, outcome).inc()
                self.metrics.downstream_latency.labels(label).observe(elapsed, traced)
        else:
            self.metrics.tool_calls.labels(surface, tool, action, outcome).inc()
            self.metrics.tool_latency.labels(surface, tool).observe(elapsed, traced)
        self.usage.record(
            tool,
            action,
            outcome == "ok",
            elapsed * 1000,
            audit.fields(principal, surface, arguments, schema, outcome, server),
        )
