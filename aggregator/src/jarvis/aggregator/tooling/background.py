"""Work started from a synchronous callback (a server's notification, a registry change) and left to run."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable

log = logging.getLogger(__name__)


class Background:
    """Keeps a reference to each task it starts until it ends (the event loop holds only weak ones), logs what one
    raises (nobody awaits it to see), and lets its owner wait for the rest when it closes."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.get_running_loop().create_task(_run(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self, *, cancel: bool = False) -> None:
        """Wait for the work still running; with `cancel`, end it first (work that is moot once its owner stops)."""
        tasks = list(self._tasks)
        if cancel:
            for task in tasks:
                task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _run(work: Awaitable[None]) -> None:
    try:
        await work
    except Exception:
        log.exception("background work failed")
