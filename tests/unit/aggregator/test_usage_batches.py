"""Usage goes to the registry in batches of at most BATCH events, a full one at once: a busy worker does not fill
its buffer (and drop events) between two intervals, and an unreachable registry is not asked in a loop."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import pytest

from jarvis.aggregator.usage import BATCH, UsageRecorder
from jarvis.aggregator.views.registry import UsageEventRecord
from jarvis.common.errors import Unavailable

pytestmark = pytest.mark.anyio


class Registry:
    def __init__(self, fail: bool = False, delay: float = 0.0) -> None:
        self.batches: list[list[UsageEventRecord]] = []
        self.fail = fail
        self.delay = delay  # how long a batch is on its way

    async def record_usage(self, events: Iterable[UsageEventRecord]) -> None:
        self.batches.append(list(events))
        await asyncio.sleep(self.delay)
        if self.fail:
            raise Unavailable("registry down")


async def until(condition: object, seconds: float = 5.0) -> None:
    async with asyncio.timeout(seconds):
        while not condition():  # type: ignore[operator]
            await asyncio.sleep(0.01)


async def test_full_batches_go_at_once_and_none_is_bigger() -> None:
    registry = Registry()
    usage = UsageRecorder(registry, flush_interval=3600, max_buffer=4 * BATCH)
    usage.start()
    try:
        for n in range(3 * BATCH):
            usage.record("jarvis_server", "list", True, 1.0)
            if n % 100 == 0:
                await asyncio.sleep(0)
        # Fewer than a batch may wait for the interval; everything else goes without it.
        await until(lambda: sum(map(len, registry.batches)) > 2 * BATCH)
        assert max(map(len, registry.batches)) <= BATCH
    finally:
        await usage.stop()
    assert sum(map(len, registry.batches)) == 3 * BATCH  # the rest went at stop
    assert usage.dropped == 0


async def test_an_unreachable_registry_is_not_asked_in_a_loop() -> None:
    registry = Registry(fail=True)
    usage = UsageRecorder(registry, flush_interval=3600, max_buffer=4 * BATCH)
    usage.start()
    try:
        for _ in range(3 * BATCH):
            usage.record("jarvis_server", "list", True, 1.0)
        await until(lambda: registry.batches)
        await asyncio.sleep(0.3)
        assert len(registry.batches) == 1  # refused once; asked again only at the interval
    finally:
        registry.fail = False
        await usage.stop()
    assert sum(map(len, registry.batches[1:])) == 3 * BATCH  # nothing lost: all of it went once it answered


async def test_calls_recorded_while_a_batch_is_on_its_way_wait_for_the_next_flush() -> None:
    """Under steady load, a flush sends what it found, once: not the one or two events each RPC's wait lets in."""
    registry = Registry(delay=0.005)
    usage = UsageRecorder(registry, flush_interval=3600)
    for _ in range(3):
        usage.record("pinger__ping", "", True, 1.0)
    flushing = asyncio.create_task(usage.flush())
    await asyncio.sleep(0)  # the flush takes the buffer and sends it
    meanwhile = 0
    while meanwhile < 100:  # a call every millisecond, for longer than several batches take
        usage.record("pinger__ping", "", True, 1.0)
        meanwhile += 1
        await asyncio.sleep(0.001)
    assert await flushing
    assert [len(batch) for batch in registry.batches] == [3]
    await usage.stop()
    assert [len(batch) for batch in registry.batches] == [3, meanwhile]  # nothing lost: they went at stop
