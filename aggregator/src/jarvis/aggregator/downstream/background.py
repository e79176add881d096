"""Work started from a synchronous callback (a server's notification, a registry change) and left to run."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable


class Background:
    """Keeps a reference to each task it starts until it ends: the event loop holds only weak ones."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.get_running_loop().create_task(_run(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


async def _run(work: Awaitable[None]) -> None:
    await work
