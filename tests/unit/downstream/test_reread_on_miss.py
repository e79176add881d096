"""Re-reads for names not known here: each miss answered by a read that began after it, misses sharing reads, reads
for misses spaced apart, a failed read answered from what is known."""

from __future__ import annotations

import asyncio
import time

import pytest

from jarvis.aggregator.downstream.hosting.reread import RereadOnMiss
from jarvis.common.errors import Unavailable

pytestmark = pytest.mark.anyio


class Registry:
    def __init__(self, seconds: float = 0.0, fail: bool = False) -> None:
        self.began: list[float] = []
        self.seconds = seconds
        self.fail = fail
        self.misses: RereadOnMiss | None = None

    async def read(self) -> None:
        began = time.monotonic()
        self.began.append(began)
        await asyncio.sleep(self.seconds)
        if self.fail:
            raise Unavailable("registry down")
        assert self.misses is not None
        self.misses.read_began(began)


def reads(registry: Registry, spacing: float = 0.25) -> RereadOnMiss:
    registry.misses = RereadOnMiss(registry.read, spacing)
    return registry.misses


async def test_a_read_that_began_before_the_miss_does_not_answer_it() -> None:
    registry = Registry()
    misses = reads(registry, spacing=0.0)
    await registry.read()  # the periodic read, just before the name was made elsewhere
    await misses.after_miss()
    assert len(registry.began) == 2


async def test_misses_waiting_for_a_read_share_the_next_one() -> None:
    registry = Registry(seconds=0.05)
    misses = reads(registry, spacing=0.0)
    await asyncio.gather(*(misses.after_miss() for _ in range(20)))
    assert len(registry.began) == 1  # one read began after all twenty arrived


async def test_reads_for_misses_begin_spaced_apart() -> None:
    registry = Registry()
    misses = reads(registry, spacing=0.2)
    for _ in range(3):
        await misses.after_miss()  # a name that exists nowhere, asked for again and again
    assert len(registry.began) == 3
    gaps = [later - earlier for earlier, later in zip(registry.began, registry.began[1:], strict=False)]
    assert min(gaps) >= 0.2


async def test_a_failed_read_is_not_the_callers_error() -> None:
    registry = Registry(fail=True)
    misses = reads(registry, spacing=0.0)
    await misses.after_miss()  # answered from what is known: the caller says "not found"
    assert len(registry.began) == 1
