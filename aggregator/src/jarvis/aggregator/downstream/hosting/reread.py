"""Reading the registry again when a name asked for is not known here.

Servers, profiles and shares made through another worker or replica reach this one at its next periodic read. A
name used the moment it was made (a profile created through one worker and used through another, a share link used
as soon as it is handed out) must not be "not found" until then, so a miss asks for a read of its own.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from jarvis.common.errors import JarvisError

log = logging.getLogger(__name__)
SPACING_SECONDS = 0.25


class RereadOnMiss:
    """Reads (`read`, the owner's whole refresh) for misses, each miss answered by a read that began after it.

    An earlier read may predate the name, so it cannot answer. Misses queue, and one read answers every miss that
    came before it began. Reads for misses begin `spacing` seconds apart at least, so names that exist nowhere (the
    share and profile paths answer 404 before authentication) cost the registry a few reads a second at most.
    The owner reports each complete read with `read_began`, so a periodic read that began after a miss answers it
    too.
    """

    def __init__(self, read: Callable[[], Awaitable[None]], spacing: float = SPACING_SECONDS) -> None:
        self._read = read
        self._spacing = spacing
        self._lock = asyncio.Lock()
        self._last_began = 0.0  # time.monotonic() when the last complete read began
        self._last_miss_read = 0.0  # when the last read for a miss began

    def read_began(self, at: float) -> None:
        """A complete read began at `at` (time.monotonic())."""
        self._last_began = max(self._last_began, at)

    async def after_miss(self) -> None:
        asked = time.monotonic()
        async with self._lock:
            if self._last_began >= asked:
                return
            await asyncio.sleep(self._last_miss_read + self._spacing - time.monotonic())
            self._last_miss_read = time.monotonic()
            try:
                await self._read()
            except JarvisError as exc:  # the caller answers from what is known; the periodic read retries
                log.warning("registry re-read for an unknown name failed (%s)", exc, extra={"error": str(exc)})
