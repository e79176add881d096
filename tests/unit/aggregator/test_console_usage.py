"""The Usage page's figures from the registry's hourly counts (aggregator/console/usage.py) and their chart geometry
(charts.py): a p95 from merged latency bins, each count in its hour, server and tool, and bars on one scale."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from jarvis.aggregator.console import charts
from jarvis.aggregator.console.usage import OWN_TOOLS, WINDOW_HOURS, Figures, window
from jarvis.common import latency_bins

START = datetime(2026, 1, 31, 9, tzinfo=UTC)


def bucket(hour: int, tool: str, latencies: list[float], *, action: str = "", target: str = "", errors: int = 0) -> Any:
    """One of `audit action=usage`'s buckets as its JSON reads (bin keys are strings)."""
    start = (START + timedelta(hours=hour)).isoformat().replace("+00:00", "Z")
    bins: dict[str, int] = {}
    for ms in latencies:
        key = str(latency_bins.bin_of(ms))
        bins[key] = bins.get(key, 0) + 1
    return {
        "start": start,
        "tool": tool,
        "action": action,
        "target": target,
        "calls": len(latencies),
        "errors": errors,
        "latency_bins": bins,
    }


def test_p95_reads_merged_bins_within_five_percent() -> None:
    figures = Figures()
    figures.add(bucket(0, "t", [float(ms) for ms in range(1, 51)]))
    figures.add(bucket(1, "t", [float(ms) for ms in range(51, 101)], errors=3))
    assert (figures.calls, figures.errors) == (100, 3)
    assert 95.0 <= figures.p95 <= 95.0 * latency_bins.RATIO
    assert Figures().p95 == 0.0


def test_each_count_is_in_its_hour_server_and_tool() -> None:
    buckets = [
        bucket(0, "notes__read", [10], target="notes"),
        bucket(1, "notes__read", [30], target="notes", errors=1),
        bucket(1, "jarvis_server", [2], action="usage", target="notes"),  # a Jarvis tool acting on notes
        bucket(-1, "notes__read", [1], target="notes"),  # before the window
        {"start": "not a time", "tool": "x"},
    ]
    shown = window(buckets, {"notes"}, START)
    hours = dict(shown["hours"])
    assert len(hours) == WINDOW_HOURS
    assert (hours["09:00"].calls, hours["10:00"].calls, hours["10:00"].errors) == (1, 2, 1)
    servers = dict(shown["servers"])
    assert (servers["notes"].calls, servers["notes"].errors) == (2, 1)
    assert 30.0 <= servers["notes"].p95 <= 30.0 * latency_bins.RATIO
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
