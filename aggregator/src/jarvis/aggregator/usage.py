"""Buffers tool-call usage in memory and ships it to the registry in batches.

An event with audit fields (who, surface, target, outcome, redacted arguments; see `audit`) is
also the registry's audit log entry for that call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable
from typing import Protocol

from opentelemetry.trace import SpanContext

from jarvis.aggregator.audit import AuditFields
from jarvis.aggregator.views.registry import UsageEventRecord
from jarvis.common import tracing
from jarvis.common.errors import JarvisError

log = logging.getLogger(__name__)
# Events per request to the registry. A full batch goes at once rather than at the next interval, so a busy
# worker never fills its buffer (and drops events). The registry pays per request (a write transaction:
# batches of 256 cost a busy worker's process ~150 us more CPU per call than one batch every 2 s), so they
# stay large; the gateway builds their protobufs off the event loop.
BATCH = 4096


# tool, action, ok, latency in ms, when (ns since the epoch), audit fields (None for plain counters), and where
# traced, the recorded call's span: the batch's RecordUsage span links to it
_Event = tuple[str, str, bool, float, int, AuditFields | None, SpanContext | None]


def _record(event: _Event) -> UsageEventRecord:
    tool, action, ok, latency_ms, at_ns, audit, _ = event
    if audit is None:
        return UsageEventRecord(tool, action, ok, latency_ms, at_ns)
    return UsageEventRecord(
        tool,
        action,
        ok,
        latency_ms,
        at_ns,
        token_id=audit.token_id,
        token_name=audit.token_name,
        surface=audit.surface,
        target=audit.target,
        outcome=audit.outcome,
        arguments_json=audit.arguments_json,
    )


class UsageSink(Protocol):
    """Where the batches go: the registry (gateways/registry.py `record_usage`), or a test's fake."""

    async def record_usage(self, events: Iterable[UsageEventRecord]) -> None: ...


class UsageRecorder:
    """Recording is a cheap append on the request path; a background task does the I/O."""

    def __init__(self, registry: UsageSink, flush_interval: float = 2.0, max_buffer: int = 10_000) -> None:
        self._registry = registry
        self._interval = flush_interval
        self._max = max_buffer
        # Plain tuples on the request path; the records are built at flush time, off it.
        self._events: list[_Event] = []
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._full = asyncio.Event()
        self.dropped = 0

    def record(self, tool: str, action: str, ok: bool, latency_ms: float, audit: AuditFields | None = None) -> None:
        if len(self._events) >= self._max:
            # The registry is unreachable for long: keep memory bounded, count what is lost.
            self.dropped += 1
            return
        self._events.append((tool, action, ok, latency_ms, time.time_ns(), audit, tracing.linked()))
        if len(self._events) >= BATCH:
            self._full.set()

    async def flush(self) -> bool:
        """Send the events buffered when it starts, a batch at a time; False if the registry refused (the unsent
        stay buffered).

        Only those: calls keep recording while a batch is on its way, and draining until the buffer is empty sent
        those one or two at a time, back to back, for as long as the load lasted (each a write transaction in the
        registry: ~0.5 ms of its CPU per call, measured). Later events wait for the next interval or a full batch.
        """
        async with self._lock:
            pending, self._events = self._events, []
            for start in range(0, len(pending), BATCH):
                batch = pending[start : start + BATCH]
                # Where traced, the batch's RecordUsage span links to each traced call it records (the first
                # tracing.MAX_LINKS): a trace viewer goes from a call to the registry write of its audit record.
                linked = [event[6] for event in batch if event[6] is not None]
                try:
                    with tracing.linking(linked):
                        await self._registry.record_usage(map(_record, batch))
                except JarvisError as exc:
                    log.warning("usage not recorded yet; will retry", extra={"events": len(batch), "error": str(exc)})
                    self._events[:0] = pending[start : start + max(0, self._max - len(self._events))]
                    return False
            return True

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._full.wait(), self._interval)
            self._full.clear()
            if not await self.flush():
                await asyncio.sleep(self._interval)  # an unreachable registry is asked again at the interval only

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="usage-flush")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        while await self.flush() and self._events:  # what was recorded while the last batch was on its way
            pass
