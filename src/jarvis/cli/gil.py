"""How long a thread that runs Python may keep the GIL from a serving process's event loop.

Why: an aggregator process runs its event loop beside threads that run Python for milliseconds at a stretch: under
`jarvis up` the embedded registry writing a batch of usage and audit rows (~10 us of Python an event, thousands of
events a batch under load), gRPC's threads, the reader of each stdio server's output. The loop lets go of the GIL
at each of its system calls (every socket read and write of every call) and then has to wait for it: with CPython's
default switch interval (5 ms) a thread running Python keeps it for up to that long, so each of those system calls
could cost a call in flight up to 5 ms while such a batch was written. Half a millisecond is about the CPU of one
call, so the loop never waits for the GIL much longer than one call takes. Measured with bench/workers.py's
16-client rounds (two workers, 2026-07-28, alternating, six rounds each): stdio-proxied p99 14-28 ms against
27-55 ms with the default, `jarvis_server list` p99 7-14 against 8-20 ms, calls/s the same or higher
(docs/decisions/0048-usage-pipeline-gil-heap.md).
"""

from __future__ import annotations

import logging
import os
import sys

log = logging.getLogger(__name__)

SWITCH_SECONDS = 0.0005


def share_gil_promptly() -> float:
    """Shorten this process's GIL switch interval to `SWITCH_SECONDS`; returns the interval it replaced."""
    replaced = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_SECONDS)
    log.info("GIL switch interval shortened", extra={"pid": os.getpid(), "seconds": sys.getswitchinterval()})
    return replaced
