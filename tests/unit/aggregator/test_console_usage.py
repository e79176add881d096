"""The Usage page's figures from audit entries (aggregator/console/usage.py) and their chart geometry (charts.py):
the nearest-rank p95, each call in its hour, server and tool, and bars on one scale."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from jarvis.aggregator.console import charts
from jarvis.aggregator.console.usage import OWN_TOOLS, WINDOW_HOURS, Figures, window

START = datetime(2026, 1, 31, 9, tzinfo=UTC)


def entry(minutes: float, tool: str, *, action: str = "", target: str = "", ok: bool = True, ms: float = 1) -> Any:
    at = (START + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")
    return {
        "at": at,
        "tool": tool,
        "action": action,
        "target": target,
        "outcome": "ok" if ok else "error",
        "latency_ms": ms,
    }


def test_p95_is_the_nearest_rank() -> None:
    figures = Figures()
    for ms in range(1, 101):  # 1..100 ms
        figures.add(True, float(ms))
    assert figures.p95 == 95.0
    assert Figures().p95 == 0.0
    one = Figures()
    one.add(False, 7.0)
    assert (one.calls, one.errors, one.p95) == (1, 1, 7.0)


def test_each_call_counts_in_its_hour_server_and_tool() -> None:
    entries = [
        entry(5, "notes__read", target="notes", ms=10),
        entry(65, "notes__read", target="notes", ok=False, ms=30),
        entry(70, "jarvis_server", action="usage", target="notes", ms=2),  # a Jarvis tool acting on notes
        entry(-5, "notes__read", target="notes"),  # before the window
        {"at": "not a time", "tool": "x"},
    ]
    shown = window(entries, {"notes"}, START)
    hours = dict(shown["hours"])
    assert len(hours) == WINDOW_HOURS
    assert (hours["09:00"].calls, hours["10:00"].calls, hours["10:00"].errors) == (1, 2, 1)
    servers = dict(shown["servers"])
    assert (servers["notes"].calls, servers["notes"].errors, servers["notes"].p95) == (2, 1, 30.0)
    assert servers[OWN_TOOLS].calls == 1
    assert set(dict(shown["tools"])) == {"notes__read", "jarvis_server usage"}
    bars = shown["calls_chart"]
    assert [b.value for b in bars[:2]] == [1, 2]
    assert bars[1].height == charts.HEIGHT  # the busiest hour is the chart's full height
    assert bars[0].height == charts.HEIGHT / 2


def test_an_empty_chart_draws_nothing_tall() -> None:
    assert charts.columns([], []) == []
    assert [b.height for b in charts.columns([0, 0], ["a", "b"])] == [0, 0]
    assert charts.line([]) == ""
    assert [round(b.width) for b in charts.rows([("a", 4), ("b", 1)])] == [charts.WIDTH, charts.WIDTH // 4]
