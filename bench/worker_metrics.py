"""What a worker's metrics file costs (decision 0070): with `--workers N` each worker writes its metrics every second
and the worker a scrape reaches merges its siblings' files. Measured here on the aggregator's own registry filled
with `--tools` label sets (each with a latency exemplar): the CPU of one publish as the text format (what the files
held before), as OpenMetrics (the exposition format that keeps exemplars) and as JSON (what they hold now), and of
one scrape merging two workers, written as text and as OpenMetrics. Process CPU time, best of `--rounds`.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest

from jarvis.aggregator.auth.metrics_access import OPENMETRICS, exposition
from jarvis.aggregator.metrics import AggregatorMetrics
from jarvis.aggregator.worker_metrics import WorkerMetrics, encoded


def filled(tools: int) -> CollectorRegistry:
    registry = CollectorRegistry()
    metrics = AggregatorMetrics(registry)
    for n in range(tools):
        metrics.tool_calls.labels("profile", f"t{n}", "", "ok").inc()
        metrics.tool_latency.labels("profile", f"t{n}").observe(0.7, {"trace_id": "a" * 32})
        metrics.downstream_latency.labels(f"s{n}").observe(0.7, {"trace_id": "a" * 32})
    return registry


def cpu_ms(work: Callable[[], object], rounds: int, repeat: int = 20) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(repeat):
            work()
        best = min(best, (time.process_time() - started) / repeat * 1000)
    return best


def row(tools: int, rounds: int) -> str:
    registry, sibling = filled(tools), filled(tools)
    directory = Path(tempfile.mkdtemp(prefix="bench-worker-metrics-"))
    WorkerMetrics(sibling, directory, 1).publish()
    own = WorkerMetrics(registry, directory, 0)
    text = cpu_ms(lambda: generate_latest(registry), rounds)
    om = cpu_ms(lambda: openmetrics_latest(registry), rounds)  # type: ignore[no-untyped-call]
    js = cpu_ms(lambda: encoded(registry.collect()), rounds)
    scrape_text = cpu_ms(lambda: exposition(own.merged(), ""), rounds)
    scrape_om = cpu_ms(lambda: exposition(own.merged(), OPENMETRICS), rounds)
    size = (directory / "1.json").stat().st_size
    return (
        f"| {tools * 3} | {size / 1024:.0f} KiB | {text:.2f} ms | {om:.2f} ms | {js:.2f} ms "
        f"| {scrape_text:.2f} ms | {scrape_om:.2f} ms |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tools", type=int, nargs="+", default=[10, 50, 200])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print("| label sets | file (JSON) | publish: text | OpenMetrics | JSON | scrape of 2: text | OpenMetrics |")
    print("|---|---|---|---|---|---|---|")
    for tools in args.tools:
        print(row(tools, args.rounds))


if __name__ == "__main__":
    main()
