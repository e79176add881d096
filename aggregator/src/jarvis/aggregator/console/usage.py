"""The admin's Usage page (issue 49): calls, errors and latency per server and per tool, over time, as inline SVG
charts with their numbers in tables.

Two tools answer, as the admin: `jarvis_server action=usage`, the registry's running totals per tool and action
(calls, errors, mean and max latency since the registry began counting), and the admin surface's `audit
action=usage`, the audit log's calls of the last WINDOW_HOURS counted by the registry per hour, tool and target with
a latency histogram each (GetUsageOverTime), which this page merges per hour, per server and per tool to read their
p95 (jarvis.common.latency_bins: within 5 %). The window is as long as the audit log's retention allows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from jarvis.aggregator.console import charts
from jarvis.aggregator.console.web import PATH, ConsoleBase
from jarvis.common import latency_bins

USAGE = f"{PATH}/admin/usage"
WINDOW_HOURS = 24
OWN_TOOLS = "Jarvis's own tools"  # the "server" of a call to a tool Jarvis serves itself
SHOWN_TOOLS = 15  # bars in a chart of one bar per tool


@dataclass
class Figures:
    """Calls, those that did not end ok (errors and refusals, as the registry counts them), and their latencies'
    histogram."""

    calls: int = 0
    errors: int = 0
    bins: dict[int, int] = field(default_factory=dict)

    def add(self, bucket: dict[str, Any]) -> None:
        self.calls += int(bucket.get("calls") or 0)
        self.errors += int(bucket.get("errors") or 0)
        # JSON made the bins' keys strings
        self.bins = latency_bins.merge(
            [self.bins, {int(k): int(v) for k, v in (bucket.get("latency_bins") or {}).items()}]
        )

    @property
    def p95(self) -> float:
        """The 95th percentile of the latencies, in ms (at most 5 % above the exact one); 0 without calls."""
        return latency_bins.percentile(self.bins, 0.95)


def tool_name(entry: dict[str, Any]) -> str:
    """A tool with its action where it has one: `jarvis_server usage`."""
    return " ".join(filter(None, (str(entry.get("tool", "")), str(entry.get("action", "")))))


def when(stamp: str | None) -> datetime | None:
    """An entry's time; one without a zone is UTC, as the registry keeps every time."""
    try:
        parsed = datetime.fromisoformat(str(stamp).replace("Z", "+00:00")) if stamp else None
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC) if parsed is not None and parsed.tzinfo is None else parsed


def window(buckets: Iterable[dict[str, Any]], servers: set[str], start: datetime) -> dict[str, Any]:
    """The registry's hourly counts since `start`, per hour, per server and per tool."""
    hours = [Figures() for _ in range(WINDOW_HOURS)]
    by_server: dict[str, Figures] = {}
    by_tool: dict[str, Figures] = {}
    for bucket in buckets:
        at = when(bucket.get("start"))
        if at is None or at < start:
            continue
        target = str(bucket.get("target", ""))
        server = target if target in servers and not bucket.get("action") else OWN_TOOLS
        hour = min(int((at - start).total_seconds() // 3600), WINDOW_HOURS - 1)
        for figures in (
            hours[hour],
            by_server.setdefault(server, Figures()),
            by_tool.setdefault(tool_name(bucket), Figures()),
        ):
            figures.add(bucket)
    labels = [(start + timedelta(hours=i)).strftime("%H:00") for i in range(WINDOW_HOURS)]
    return {
        "hours": list(zip(labels, hours, strict=True)),
        "servers": sorted(by_server.items(), key=lambda kv: -kv[1].calls),
        "tools": sorted(by_tool.items(), key=lambda kv: -kv[1].calls),
        "calls_chart": charts.columns([h.calls for h in hours], labels),
        "errors_chart": charts.columns([h.errors for h in hours], labels, top=max(h.calls for h in hours) or 1),
        "p95_line": charts.line([h.p95 for h in hours]),
        "p95_top": max(h.p95 for h in hours),
        "calls_top": max(h.calls for h in hours),
    }


def totals(stats: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The registry's counts per tool and action, most called first, with the mean latency."""
    rows = [{**s, "name": tool_name(s)} for s in stats]
    return sorted(rows, key=lambda r: -int(r.get("calls") or 0))


class UsagePages(ConsoleBase):
    def usage_routes(self) -> list[Route]:
        return [Route(USAGE, self.usage_page, methods=["GET"])]

    async def usage_page(self, request: Request) -> Response:
        who = await self._who(request, admin=True)
        if isinstance(who, Response):
            return who
        principal = who[1]
        counted = await self._ask(principal, "jarvis_server", {"action": "usage"})
        listed = await self._ask(principal, "jarvis_server", {"action": "list"})
        servers = {str(s.get("name")) for s in listed.payload.get("servers", [])} if listed.ok else set()
        start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=WINDOW_HOURS - 1)
        counted_by_hour = await self._ask(
            principal, "audit", {"action": "usage", "since": start.isoformat(), "bucket_seconds": 3600}
        )
        rows = totals(counted.payload.get("usage") or [] if counted.ok else [])
        buckets = counted_by_hour.payload.get("buckets") or [] if counted_by_hour.ok else []
        values = {
            "totals": rows,
            "totals_chart": charts.rows([(r["name"], float(r.get("calls") or 0)) for r in rows[:SHOWN_TOOLS]]),
            "window": window(buckets, servers, start),
            "window_hours": WINDOW_HOURS,
            "since": start.strftime("%Y-%m-%d %H:00 UTC"),
            "error": counted.error or counted_by_hour.error,
            "charts": charts,
        }
        ok = counted.ok and counted_by_hour.ok
        return self._page(request, "usage.html", values, status=200 if ok else 400, who=who)
