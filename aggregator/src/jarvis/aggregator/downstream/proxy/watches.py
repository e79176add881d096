"""Resource subscriptions through a surface: one downstream subscription per (server, URI), however many watch it.

Jarvis holds one session per server for all its callers, so a caller's `resources/subscribe` cannot simply be
passed on: a second caller's unsubscribe would end the first one's updates. A surface records who watches what;
the server is subscribed (on Jarvis's session, in its own version) when the first watcher comes and unsubscribed
when the last goes, and each `notifications/resources/updated` it sends reaches every watcher of that URI in the
form the watcher knows it (namespaced on a prefixed profile). A 2025-era caller watches with `resources/subscribe`
and hears on its session; a 2026-07-28 caller watches with `subscriptions/listen`, whose stream listen.py serves
(acknowledgement first, subscription id on every frame).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, SubscriptionsListenResult

from jarvis.aggregator.downstream.hosting.host import DownstreamHost
from jarvis.aggregator.downstream.hosting.lists import PROMPTS, RESOURCES, TOOLS, Lists
from jarvis.aggregator.downstream.proxy.listen import ListenStream
from jarvis.aggregator.tooling.background import Background
from jarvis.common.errors import JarvisError

log = logging.getLogger(__name__)

MAX_LISTEN_STREAMS = 1024  # as the SDK's own ListenHandler bounds them
_LIST_EVENTS: tuple[tuple[str, ServerEvent], ...] = (
    (TOOLS, ToolsListChanged()),
    (PROMPTS, PromptsListChanged()),
    (RESOURCES, ResourcesListChanged()),
)


@dataclass(eq=False)
class Watcher:
    """One caller's interest: its session (2025-era) or one listen stream (2026-07-28)."""

    present: Callable[[str, str], str]  # (server, the server's URI) -> the URI as this caller knows it
    deliver: Callable[[str], Awaitable[None]]
    watching: set[tuple[str, str]] = field(default_factory=set)  # (server, the server's URI)


class ResourceWatches:
    def __init__(self, host: DownstreamHost) -> None:
        self.host = host
        self._watchers: dict[tuple[str, str], set[Watcher]] = {}
        self._streams: dict[str, set[ListenStream]] = {}  # listen streams by target, for tools changes
        self._background = Background()
        # Per (server, URI), subscribes and unsubscribes take turns: a server never sees a last unsubscribe after a
        # new subscribe. (One small lock per URI ever watched; a slow server holds up its own URIs only.)
        self._turns: dict[tuple[str, str], asyncio.Lock] = {}
        host.on_resource_updated(self._updated)
        host.subscribe(self._servers_changed)

    async def close(self) -> None:
        """Wait for the deliveries still under way."""
        await self._background.close()

    async def watch(self, watcher: Watcher, server: str, uri: str) -> None:
        """Start delivering `uri`'s updates to `watcher`; the server's refusal (an MCPError) is the caller's."""
        key = (server, uri)
        async with self._turns.setdefault(key, asyncio.Lock()):
            if key in watcher.watching:
                return
            if not self._watchers.get(key):
                await self.host.forward(server, "resources/subscribe", {"uri": uri})
            self._watchers.setdefault(key, set()).add(watcher)
            watcher.watching.add(key)

    async def unwatch(self, watcher: Watcher, server: str, uri: str) -> None:
        key = (server, uri)
        async with self._turns.setdefault(key, asyncio.Lock()):
            watcher.watching.discard(key)
            watchers = self._watchers.get(key)
            if watchers is None:
                return
            watchers.discard(watcher)
            if not watchers:
                del self._watchers[key]
                # The last watcher left: the server may stop sending; a failure here costs it nothing to ignore.
                with contextlib.suppress(MCPError, JarvisError):
                    await self.host.forward(server, "resources/unsubscribe", {"uri": uri})

    def forget(self, watcher: Watcher) -> None:
        """Drop everything `watcher` watches, in the background (it may be called while being cancelled)."""
        for server, uri in list(watcher.watching):
            self._background.spawn(self.unwatch(watcher, server, uri))

    async def listen(
        self,
        ctx: ServerRequestContext[Any],
        stream: ListenStream,
        target: str,
        present: Callable[[str, str], str],
        routes: list[tuple[str, str]],
    ) -> SubscriptionsListenResult:
        """Serve one `subscriptions/listen` stream whose resource URIs route to `routes` (server, server's URI)."""
        streams = self._streams.setdefault(target, set())
        if sum(len(s) for s in self._streams.values()) >= MAX_LISTEN_STREAMS:
            raise MCPError(INTERNAL_ERROR, "Subscription limit reached")

        async def deliver(uri: str) -> None:
            stream.deliver(ResourceUpdated(uri=uri))

        watcher = Watcher(present, deliver)
        streams.add(stream)
        try:
            for server, uri in routes:
                await self.watch(watcher, server, uri)
            return await stream.serve(ctx)
        finally:
            streams.discard(stream)
            self.forget(watcher)

    def lists_changed(self, targets: set[str], lists: Lists) -> None:
        """Tell the listen streams of `targets` that their `lists` changed (each hears the kinds it asked for)."""
        events = [event for kind, event in _LIST_EVENTS if kind in lists]
        for target in targets:
            for stream in list(self._streams.get(target, ())):
                for event in events:
                    stream.deliver(event)

    def _servers_changed(self, profiles: set[str], servers: set[str], lists: Lists) -> None:
        # A server that started again (a crash, a restart, a new launch spec) forgot Jarvis's subscriptions: renew
        # them. Other changes only repeat a subscribe, which servers take as a no-op. A start is told as a change of
        # its tools; a server's own notice that its prompts or resources changed says nothing of a restart.
        if TOOLS not in lists:
            return
        for server in servers:
            running = self.host.hosts.get(server)
            if running is None or running.connection is None:
                continue  # stopped: asking would start it; it renews when it starts
            for watched_server, uri in list(self._watchers):
                if watched_server == server:
                    self._background.spawn(self._renew(server, uri))

    async def _renew(self, server: str, uri: str) -> None:
        async with self._turns.setdefault((server, uri), asyncio.Lock()):
            if self._watchers.get((server, uri)):
                with contextlib.suppress(MCPError, JarvisError):
                    await self.host.forward(server, "resources/subscribe", {"uri": uri})

    def _updated(self, server: str, uri: str) -> None:
        # A server may name a sub-resource of what was subscribed; whoever watches an enclosing URI hears of it.
        for (watched_server, watched), watchers in list(self._watchers.items()):
            if watched_server == server and (uri == watched or uri.startswith(watched.rstrip("/") + "/")):
                for watcher in list(watchers):
                    self._background.spawn(self._deliver(watcher, server, uri))

    async def _deliver(self, watcher: Watcher, server: str, uri: str) -> None:
        try:
            await watcher.deliver(watcher.present(server, uri))
        except Exception:  # the caller's session is gone: it watches nothing any more
            log.debug("resource update undeliverable; dropping the watcher", exc_info=True)
            self.forget(watcher)
