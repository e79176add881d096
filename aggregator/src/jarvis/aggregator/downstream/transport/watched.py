"""The resources Jarvis watches at a server reached in 2026-07-28 only (issue 33).

That version has no resources/subscribe: a client names the URIs it wants `notifications/resources/updated` for in
the `resourceSubscriptions` of a listen request. So a subscribe or unsubscribe Jarvis would send such a server
changes the set kept here instead, and the connection's listen stream (changes.py) listens again with the new set.
"""

from __future__ import annotations

import asyncio

import mcp_types as types
from mcp.shared.exceptions import MCPError

from jarvis.aggregator.tooling.json_types import JsonObject

SUBSCRIBE = "resources/subscribe"
SUBSCRIBING = frozenset({SUBSCRIBE, "resources/unsubscribe"})


class WatchedResources:
    def __init__(self, server: str) -> None:
        self.server = server
        self.uris: set[str] = set()
        self.changed = asyncio.Event()  # set when `uris` changed; the listen stream clears it as it listens again

    def apply(
        self, method: str, params: JsonObject | None, capabilities: types.ServerCapabilities | None
    ) -> JsonObject:
        """Take a subscribe or unsubscribe meant for the server; its (empty) result."""
        uri = (params or {}).get("uri")
        if not isinstance(uri, str) or not uri:
            raise MCPError(code=types.INVALID_PARAMS, message=f"{method} needs a resource URI")
        resources = capabilities.resources if capabilities is not None else None
        if resources is None or not resources.subscribe:
            raise MCPError(
                code=types.METHOD_NOT_FOUND, message=f"server '{self.server}' offers no resource subscriptions"
            )
        before = set(self.uris)
        if method == SUBSCRIBE:
            self.uris.add(uri)
        else:
            self.uris.discard(uri)
        if self.uris != before:
            self.changed.set()
        return {}
