"""/metrics for every worker at once, whichever worker the scrape reaches.

Workers share one port, and the kernel hands each connection to any of them, so a scrape answered by
one worker's registry alone would jump between workers' counters: Prometheus would read each jump down
as a counter reset and every rate would be wrong. Each worker therefore writes its own exposition to a
private directory the main process made (one file per worker slot, replaced atomically every
`interval` seconds), and the worker that takes a scrape answers with its own live figures plus the
others' latest files, every series labelled `worker="<slot>"`. Dashboards sum over `worker`, as they
sum over pods. A file older than `stale_after` belongs to a worker that died or hangs; it is left out
until the worker's replacement writes it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

WORKER_LABEL = "worker"


class _Merged(Collector):
    """Metric families of several workers, one family per name, every sample labelled with its worker."""

    def __init__(self, expositions: Iterable[tuple[int, str]]) -> None:
        self.families: dict[str, Metric] = {}
        for slot, text in expositions:
            for family in text_string_to_metric_families(text):
                merged = self.families.setdefault(
                    family.name, Metric(family.name, family.documentation, family.type, family.unit)
                )
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
        return self.directory / f"{self.slot}.prom"

    def publish(self) -> None:
        """Replace this worker's file with its current figures (a reader never sees half a file)."""
        partial = self.directory / f".{self.slot}.{os.getpid()}.tmp"
        partial.write_bytes(generate_latest(self.registry))
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

    def _siblings(self) -> Iterator[tuple[int, str]]:
        now = time.time()
        for path in sorted(self.directory.glob("*.prom")):
            slot = int(path.stem) if path.stem.isdigit() else None
            if slot is None or slot == self.slot:
                continue
            try:
                if now - path.stat().st_mtime <= self.stale_after:
                    yield slot, path.read_text()
            except OSError:
                continue  # it was replaced or removed between the listing and the read

    def render(self) -> bytes:
        """Every live worker's metrics, this worker's read now, the others' from their latest files."""
        own = generate_latest(self.registry).decode()
        merged = CollectorRegistry(auto_describe=False)
        merged.register(_Merged([(self.slot, own), *self._siblings()]))
        return generate_latest(merged)
