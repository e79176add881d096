"""Latency histograms: a percentile read from merged bins is never below the true one, nor more than 5 % above it."""

from __future__ import annotations

import math
import random

from jarvis.common import latency_bins


def exact(latencies: list[float], fraction: float) -> float:
    ordered = sorted(latencies)
    return ordered[math.ceil(fraction * len(ordered)) - 1]


def histogram(latencies: list[float]) -> dict[int, int]:
    counted: dict[int, int] = {}
    for latency in latencies:
        bin_index = latency_bins.bin_of(latency)
        counted[bin_index] = counted.get(bin_index, 0) + 1
    return counted


def test_a_latency_falls_in_the_bin_whose_upper_edge_bounds_it() -> None:
    for latency in (0.0, 0.001, 0.0011, 0.5, 1.0, 12.3, 999.9, 40_000.0):
        upper = latency_bins.upper_ms(latency_bins.bin_of(latency))
        assert latency <= upper * (1 + 1e-9)
        assert upper <= max(latency, latency_bins.FLOOR_MS) * latency_bins.RATIO * (1 + 1e-9)


def test_p95_of_merged_groups_is_within_five_percent_of_the_exact_one() -> None:
    rng = random.Random(49)
    groups = [[rng.lognormvariate(mu, 1.0) for _ in range(2000)] for mu in (0.0, 2.0, 4.0)]
    merged = latency_bins.merge(histogram(g) for g in groups)
    everything = [x for g in groups for x in g]
    true = exact(everything, 0.95)
    read = latency_bins.percentile(merged, 0.95)
    assert true <= read <= true * latency_bins.RATIO


def test_no_calls_reads_zero() -> None:
    assert latency_bins.percentile({}, 0.95) == 0.0
