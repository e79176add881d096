"""The admin's Usage page (issue 49): calls, errors and latency per server and per tool, over time, as inline SVG
charts with their numbers in tables.

Two tools answer, as the admin: `jarvis_server action=usage`, the registry's running totals per tool and action
(calls, errors, mean and max latency since the registry began counting), and the admin surface's `audit
action=list`, whose entries (one per call a client made, with its time, latency and outcome) give the last
WINDOW_HOURS hour by hour, each server's and tool's p95, and the server a call went to. The registry keeps no time
buckets and no latency distribution of its own (services/registry/domain/usage.py): the window is as long as the
audit log's retention allows and as wide as WINDOW_MAX calls.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from jarvis.aggregator.console import charts
from jarvis.aggregator.console.web import PATH, ConsoleBase
from jarvis.aggregator.tooling.principal import Principal

USAGE = f"{PATH}/admin/usage"
WINDOW_HOURS = 24
WINDOW_MAX, AUDIT_PAGE = 5000, 1000  # the calls the window reads at most, a page of the audit log at a time
OWN_TOOLS = "Jarvis's own tools"  # the "server" of a call to a tool Jarvis serves itself
SHOWN_TOOLS = 15  # bars in a chart of one bar per tool


@dataclass
class Figures:
    """Calls, those that did not end ok (errors and refusals, as the registry counts them), and their latencies."""

    calls: int = 0
    errors: int = 0
    latencies: list[float] = field(default_factory=list)

    def add(self, ok: bool, latency_ms: float) -> None:
        self.calls += 1
        self.errors += 0 if ok else 1
        self.latencies.append(latency_ms)

    @property
    def p95(self) -> float:
        """The nearest-rank 95th percentile of the latencies, in ms; 0 without calls."""
        if not self.latencies:
            return 0.0
        ordered = sorted(self.latencies)
        return ordered[math.ceil(0.95 * len(ordered)) - 1]


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


def window(entries: Iterable[dict[str, Any]], servers: set[str], start: datetime) -> dict[str, Any]:
    """The audit entries since `start` per hour, per server and per tool."""
    hours = [Figures() for _ in range(WINDOW_HOURS)]
    by_server: dict[str, Figures] = {}
    by_tool: dict[str, Figures] = {}
    for entry in entries:
        at = when(entry.get("at"))
        if at is None or at < start:
            continue
        ok, latency = entry.get("outcome") == "ok", float(entry.get("latency_ms") or 0.0)
        target = str(entry.get("target", ""))
        server = target if target in servers and not entry.get("action") else OWN_TOOLS
        hour = min(int((at - start).total_seconds() // 3600), WINDOW_HOURS - 1)
        for figures in (
            hours[hour],
            by_server.setdefault(server, Figures()),
            by_tool.setdefault(tool_name(entry), Figures()),
        ):
            figures.add(ok, latency)
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
        entries, error = await self._recent(principal, start)
        rows = totals(counted.payload.get("usage") or [] if counted.ok else [])
        values = {
            "totals": rows,
            "totals_chart": charts.rows([(r["name"], float(r.get("calls") or 0)) for r in rows[:SHOWN_TOOLS]]),
            "window": window(entries, servers, start),
            "window_hours": WINDOW_HOURS,
            "since": start.strftime("%Y-%m-%d %H:00 UTC"),
            "truncated": len(entries) >= WINDOW_MAX,
            "error": counted.error or error,
            "charts": charts,
        }
        return self._page(request, "usage.html", values, status=200 if counted.ok and not error else 400, who=who)

    async def _recent(self, principal: Principal, start: datetime) -> tuple[list[dict[str, Any]], str]:
        """The audit entries since `start`, newest first, up to WINDOW_MAX."""
        entries: list[dict[str, Any]] = []
        arguments: dict[str, Any] = {"action": "list", "since": start.isoformat(), "limit": AUDIT_PAGE}
        while len(entries) < WINDOW_MAX:
            page = await self._ask(principal, "audit", arguments)
            if not page.ok:
                return entries, page.error
            entries += page.payload.get("entries", [])
            before = int(page.payload.get("scanned_to") or 0)
            if before == 0:
                break
            arguments["before_id"] = before
        return entries[:WINDOW_MAX], ""
