"""List changes from a server reached in 2026-07-28 only: heard on a `subscriptions/listen` stream.

A 2025-era session hears `notifications/*/list_changed` on its standing stream. On the 2026-07-28 wire there is
none: a server sends a notification only on the answer stream of a `subscriptions/listen` request that asked for
that kind, and never another kind. So for such a server Jarvis holds one listen stream open for the list changes
the server says it announces (`listChanged` in its capabilities), for as long as the connection lives, and opens
it again when it ends (a dropped listen stream is not resumable: the client listens again). What the stream
carries reaches the connection's notification handler like any other notification, so a tools change reloads the
tools as it does for a 2025 server.
"""

from __future__ import annotations

import asyncio
import logging

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


async def hear_changes(connection: Connection) -> None:
    """Hold a listen stream for `connection`'s announced list changes while it lives (2026-07-28 sessions only);
    returns only once the connection is lost."""
    wanted = changes_announced(connection.capabilities)
    if connection.protocol_version not in MODERN_PROTOCOL_VERSIONS or not wanted:
        await connection.lost.wait()
        return
    server = connection.plan.server
    delay = FIRST_DELAY
    while not connection.lost.is_set():
        try:
            await connection.listen(wanted)
            delay = FIRST_DELAY  # it was open until the server ended it: listen again soon
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # refused or broken: try again later, the connection itself is watched elsewhere
            log.info("server %s: listening for list changes failed (%s); again in %.0f s", server, exc, delay)
            delay = min(MAX_DELAY, delay * 2)
        await asyncio.sleep(delay)
