"""Latencies as a sparse log-scale histogram: bins 5 % wide, so a percentile read from them is at most 5 % above the
true one, whatever the number of calls. The registry counts calls per bin (GetUsageOverTime) and the console merges
bins of any grouping (per hour, per server, per tool) before reading a p95, which exact per-group percentiles would
not allow without keeping every latency."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

RATIO = 1.05
_LOG = math.log(RATIO)
FLOOR_MS = 0.001  # latencies at or below it share bin 0


def bin_of(latency_ms: float) -> int:
    """The bin of a latency: bin b holds (FLOOR·RATIO^(b-1), FLOOR·RATIO^b]."""
    if latency_ms <= FLOOR_MS:
        return 0
    return max(1, math.ceil(math.log(latency_ms / FLOOR_MS) / _LOG - 1e-9))


def upper_ms(bin_index: int) -> float:
    """A bin's upper edge: what a percentile falling in it reads as."""
    return FLOOR_MS * RATIO**bin_index


def merge(histograms: Iterable[Mapping[int, int]]) -> dict[int, int]:
    merged: dict[int, int] = {}
    for histogram in histograms:
        for bin_index, count in histogram.items():
            merged[bin_index] = merged.get(bin_index, 0) + count
    return merged


def percentile(histogram: Mapping[int, int], fraction: float) -> float:
    """The nearest-rank percentile (0 < fraction <= 1) of the counted latencies, in ms; 0 without any."""
    total = sum(histogram.values())
    if total == 0:
        return 0.0
    rank = math.ceil(fraction * total)
    seen = 0
    for bin_index in sorted(histogram):
        seen += histogram[bin_index]
        if seen >= rank:
            return upper_ms(bin_index)
    return upper_ms(max(histogram))
