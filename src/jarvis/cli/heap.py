"""The objects a serving process holds once it has started, kept out of the garbage collector's full passes.

Why: an aggregator process holds about 230,000 objects once started (modules, pydantic schemas, the discovery
index) and keeps nearly all of them until it exits. A full (generation 2) collection walks every one of them with
the event loop stopped: 135-150 ms on this machine, so every call in flight waits that long (seen as 145-160 ms
stalls among 16 concurrent clients, bench/workers.py, about once every 8 s of load per worker). `gc.freeze` moves
them to a generation no collection visits; after it, the same load's full collections took about 1 ms. One
collection first, so that garbage of the start-up is freed rather than frozen with them. Objects created later are
collected as usual, and a frozen object that is no longer referenced is still freed by its reference count.
"""

from __future__ import annotations

import gc
import logging
import os
import time

log = logging.getLogger(__name__)


def freeze_startup_heap() -> int:
    """Collect once, then freeze every object left; returns how many objects are frozen."""
    started = time.perf_counter()
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    took_ms = round((time.perf_counter() - started) * 1000, 1)
    log.info("start-up heap frozen", extra={"pid": os.getpid(), "frozen_objects": frozen, "collect_ms": took_ms})
    return frozen
