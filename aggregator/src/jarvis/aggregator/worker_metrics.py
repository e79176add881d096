"""/metrics for every worker at once, whichever worker the scrape reaches.

Workers share one port, and the kernel hands each connection to any of them, so a scrape answered by
one worker's registry alone would jump between workers' counters: Prometheus would read each jump down
as a counter reset and every rate would be wrong. Each worker therefore writes its own exposition to a
private directory the main process made (one file per worker slot, replaced atomically every
`interval` seconds), and the worker that takes a scrape answers with its own live figures plus the
others' latest files, every series labelled `worker="<slot>"`. Dashboards sum over `worker`, as they
sum over pods. A file older than `stale_after` belongs to a worker that died or hangs; it is left out
until the worker's replacement writes it again.

The files hold the registry's metric families as JSON, samples with their exemplars (the latency histograms'
trace ids), so a scrape that asks for OpenMetrics sees every worker's exemplars as it sees a single worker's, and
one that asks for the text format gets that, both written from the same merged families. JSON, not an exposition
format: the text format drops exemplars, and writing OpenMetrics cost 1.7 times the text format's CPU every second
(prometheus_client's writer re-parses its version per sample), where JSON costs 0.6 times it and is read back without
a parser of its own (decision 0070).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Exemplar

log = logging.getLogger(__name__)

WORKER_LABEL = "worker"


def encoded(families: Iterable[Metric]) -> bytes:
    """Metric families as a worker's file holds them: every field a scrape writes, exemplars included."""
    return json.dumps(
        [
            [
                f.name,
                f.documentation,
                f.type,
                f.unit,
                [[s.name, s.labels, s.value, s.timestamp, s.exemplar] for s in f.samples],
            ]
            for f in families
        ]
    ).encode()


def decoded(data: str | bytes) -> list[Metric]:
    """The families `encoded` wrote (an exemplar, a named tuple, was written as its fields)."""
    families = []
    for name, documentation, kind, unit, samples in json.loads(data):
        family = Metric(name, documentation, kind, unit)
        for sample, labels, value, timestamp, exemplar in samples:
            family.add_sample(sample, labels, value, timestamp, None if exemplar is None else Exemplar(*exemplar))
        families.append(family)
    return families


class _Merged(Collector):
    """Metric families of several workers, one family per name, every sample labelled with its worker."""

    def __init__(self, workers: Iterable[tuple[int, Iterable[Metric]]]) -> None:
        self.families: dict[str, Metric] = {}
        for slot, families in workers:
            for family in families:
                merged = self.families.setdefault(
                    family.name, Metric(family.name, family.documentation, family.type, family.unit)
                )
                # A sample keeps its exemplar (its trace id) and its timestamp: only the labels gain the worker.
                merged.samples += [s._replace(labels={**s.labels, WORKER_LABEL: str(slot)}) for s in family.samples]

    def collect(self) -> Iterator[Metric]:
        yield from self.families.values()


class WorkerMetrics:
    """Publishes this worker's metrics beside its siblings' and answers a scrape for all of them."""

    def __init__(
        self,
        registry: CollectorRegistry,
        directory: Path,
        slot: int,
        interval: float = 1.0,
        stale_after: float = 10.0,
    ) -> None:
        self.registry = registry
        self.directory = directory
        self.slot = slot
        self.interval = interval
        self.stale_after = stale_after

    @property
    def path(self) -> Path:
        return self.directory / f"{self.slot}.json"

    def publish(self) -> None:
        """Replace this worker's file with its current figures (a reader never sees half a file)."""
        partial = self.directory / f".{self.slot}.{os.getpid()}.tmp"
        partial.write_bytes(encoded(self.registry.collect()))
        partial.replace(self.path)

    async def run(self) -> None:
        """Publish every `interval` seconds until cancelled, then take this worker's file away."""
        try:
            while True:
                try:
                    await asyncio.to_thread(self.publish)
                except OSError as exc:
                    log.warning("worker metrics not published", extra={"error": str(exc)})
                await asyncio.sleep(self.interval)
        finally:
            with contextlib.suppress(OSError):
                self.path.unlink()

    def _siblings(self) -> Iterator[tuple[int, list[Metric]]]:
        now = time.time()
        for path in sorted(self.directory.glob("*.json")):
            slot = int(path.stem) if path.stem.isdigit() else None
            if slot is None or slot == self.slot:
                continue
            try:
                if now - path.stat().st_mtime <= self.stale_after:
                    yield slot, decoded(path.read_bytes())
            except OSError:
                continue  # it was replaced or removed between the listing and the read
            except (ValueError, TypeError) as exc:  # not what `encoded` writes: left out, as a stale file is
                log.warning("worker metrics unreadable", extra={"worker": slot, "error": str(exc)})

    def merged(self) -> CollectorRegistry:
        """Every live worker's metrics, this worker's read now (from its registry: nothing written and read back),
        the others' from their latest files; written in the format the scraper asks for (`exposition`)."""
        merged = CollectorRegistry(auto_describe=False)
        merged.register(_Merged([(self.slot, self.registry.collect()), *self._siblings()]))
        return merged
