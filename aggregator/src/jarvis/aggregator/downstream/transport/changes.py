"""List changes from a server reached in 2026-07-28 only: heard on a `subscriptions/listen` stream.

A 2025-era session hears `notifications/*/list_changed` on its standing stream. On the 2026-07-28 wire there is
none: a server sends a notification only on the answer stream of a `subscriptions/listen` request that asked for
that kind, and never another kind. So for such a server Jarvis holds one listen stream open for the list changes
the server says it announces (`listChanged` in its capabilities), for as long as the connection lives, and opens
it again when it ends (a dropped listen stream is not resumable: the client listens again). What the stream
carries reaches the connection's notification handler like any other notification, so a tools change reloads the
tools as it does for a 2025 server.

Resource subscriptions ride the same stream: 2026-07-28 has no resources/subscribe, a listen request names the
URIs it wants `notifications/resources/updated` for (`resourceSubscriptions`). The URIs Jarvis's callers watch
are the connection's (watched.py); when they change, the stream is closed and opened again with the new set.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from typing import Any

import mcp_types as types
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from jarvis.aggregator.downstream.transport.connection import Connection
from jarvis.aggregator.tooling.json_types import JsonObject

log = logging.getLogger(__name__)

FIRST_DELAY, MAX_DELAY = 1.0, 30.0  # seconds before listening again after a stream ended, doubling while it fails


def changes_announced(capabilities: types.ServerCapabilities | None) -> JsonObject:
    """The listen filter for the list changes a server announces (empty: nothing to listen for)."""
    if capabilities is None:
        return {}
    announced = {
        "toolsListChanged": capabilities.tools is not None and bool(capabilities.tools.list_changed),
        "promptsListChanged": capabilities.prompts is not None and bool(capabilities.prompts.list_changed),
        "resourcesListChanged": capabilities.resources is not None and bool(capabilities.resources.list_changed),
    }
    return {kind: True for kind, yes in announced.items() if yes}


def listen_filter(announced: JsonObject, resources: set[str]) -> JsonObject:
    """What a listen request asks for: the announced list changes, and updates of the watched resources."""
    return {**announced, "resourceSubscriptions": sorted(resources)} if resources else dict(announced)


async def hear_changes(connection: Connection) -> None:
    """Hold a listen stream for `connection`'s announced list changes and watched resources while it lives (2026-07-28
    sessions only); returns only once the connection is lost."""
    if connection.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        await connection.lost.wait()
        return
    announced = changes_announced(connection.capabilities)
    server = connection.plan.server
    delay = FIRST_DELAY
    while not connection.lost.is_set():
        connection.watched.changed.clear()
        wanted = listen_filter(announced, connection.watched.uris)
        if not wanted:  # nothing to listen for until a resource is watched
            await _first_of(connection.lost.wait(), connection.watched.changed.wait())
            continue
        listening = asyncio.ensure_future(connection.listen(wanted))
        try:
            await _first_of(listening, connection.watched.changed.wait(), cancel_first=False)
        except asyncio.CancelledError:  # the connection ended: so does its stream
            listening.cancel()
            raise
        if not listening.done():  # the watched URIs changed: close this stream and listen again with the new set
            listening.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await listening
            continue
        try:
            listening.result()
            delay = FIRST_DELAY  # it was open until the server ended it: listen again soon
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # refused or broken: try again later, the connection itself is watched elsewhere
            log.info("server %s: listening for changes failed (%s); again in %.0f s", server, exc, delay)
            delay = min(MAX_DELAY, delay * 2)
        with contextlib.suppress(TimeoutError):  # a newly watched resource does not wait out the delay
            await asyncio.wait_for(connection.watched.changed.wait(), delay)


async def _first_of(*waits: Awaitable[Any], cancel_first: bool = True) -> None:
    """Wait until one of `waits` is done; cancel the others (and the first too unless `cancel_first` is False: the
    first of `waits` is then the caller's, to read or cancel)."""
    futures = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(futures, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for index, future in enumerate(futures):
            if cancel_first or index:
                future.cancel()
