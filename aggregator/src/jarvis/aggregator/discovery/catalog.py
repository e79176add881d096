"""The discovery catalog: every tool Jarvis knows, indexed once and kept current in place.

Jarvis's own surfaces are indexed when the catalog starts. The registry's part (installed
servers and the catalog of installable ones) is read at start, again right after a write that
changes it (`changed`) or after the downstream host learns a server's tools, and every
`refresh_seconds` so that replicas converge on writes made elsewhere. A digest of the registry's
answers and of the host's view skips the work when nothing changed, and only entries that differ
touch the index.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from collections.abc import Coroutine, Iterable
from typing import Any

from jarvis.aggregator.discovery.dense import DenseIndex
from jarvis.aggregator.discovery.entry import ToolEntry
from jarvis.aggregator.discovery.index import ToolIndex
from jarvis.aggregator.discovery.sources import (
    catalog_entries,
    gateway_entries,
    host_fingerprint,
    server_entries,
    surface_entries,
)
from jarvis.aggregator.downstream.hosting.host import DownstreamHost
from jarvis.aggregator.downstream.hosting.lists import TOOLS, Lists
from jarvis.aggregator.gateways.protocols import DebugApi, RegistryApi
from jarvis.aggregator.tooling.tool import Surface, Tool
from jarvis.aggregator.views.registry import CatalogEntryView, ServerView
from jarvis.common.errors import JarvisError

log = logging.getLogger(__name__)

REFRESH_SECONDS = 30.0


class Catalog:
    """The index plus what it takes to call what it finds."""

    def __init__(
        self,
        registry: RegistryApi,
        *,
        host: DownstreamHost | None = None,
        debug: DebugApi | None = None,
        refresh_seconds: float = REFRESH_SECONDS,
        dense: DenseIndex | None = None,
    ) -> None:
        self.dense = dense
        self.index = ToolIndex(dense=dense)
        self._registry = registry
        self._host = host
        self._debug = debug
        self._debug_listing: list[dict[str, Any]] = []
        self._pending: set[asyncio.Task[None]] = set()
        self._asked_to_learn: set[str] = set()
        self._refresh_seconds = refresh_seconds
        self._routes: dict[str, tuple[str, Tool]] = {}
        self._registry_names: set[str] = set()
        self._digest = ""
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None

    def route(self, name: str) -> tuple[str, Tool] | None:
        """The surface and Tool behind a Jarvis tool's catalog name (the gateway, for a gateway's sub-tool)."""
        found = self._routes.get(name)
        if found is None:
            entry = self.index.get(name)
            if entry is not None and entry.gateway:
                found = self._routes.get(entry.gateway)
        return found

    def add_surfaces(self, surfaces: Iterable[Surface], skip: str) -> None:
        surfaces = list(surfaces)
        for surface in surfaces:
            if surface.name != skip:
                self._routes.update({tool.name: (surface.name, tool) for tool in surface.tools})
        self.index.upsert(surface_entries(surfaces, skip))

    async def start(self, surfaces: Iterable[Surface], skip: str) -> None:
        """Index the surfaces and the registry, then keep refreshing in the background."""
        self.add_surfaces(surfaces, skip)
        if self.dense is not None:
            self.dense.start()
        await self.refresh()
        if self._host is not None:
            self._host.subscribe(self._host_changed)
        if self._task is None:
            self._task = asyncio.create_task(self._refresh_forever(), name="discovery-catalog-refresh")

    def _learn_unknown_tools(self, servers: Iterable[ServerView]) -> None:
        """A server created by hand declares no tools: have the host start it once to learn them.

        Once per server and process, in the background; the host's listener brings the tools in.
        A server that fails to start says why in `jarvis_server action=info`.
        """
        if self._host is None:
            return
        host = self._host
        unknown = tuple(
            s.name
            for s in servers
            if not s.tools and s.name not in self._asked_to_learn and host.tools_of(s.name) is None
        )
        if unknown:
            self._asked_to_learn.update(unknown)
            self._spawn(host.learn_tools(unknown))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def _host_changed(self, _profiles: set[str], servers: set[str], lists: Lists) -> None:
        """The host learned or lost a server's tools (started it, a pin changed): follow at once."""
        if servers and TOOLS in lists:
            self._spawn(self.changed())

    async def stop(self) -> None:
        for task in list(self._pending):
            task.cancel()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self.dense is not None:
            await asyncio.to_thread(self.dense.stop)

    async def changed(self) -> None:
        """Called after a write that adds or removes servers; never fails the write that called it."""
        try:
            await self.refresh(debug=False)  # servers changed, the debug service's tools did not
        except Exception:  # the periodic refresh retries; the write itself succeeded
            log.exception("discovery catalog refresh after a write failed")

    async def refresh(self, *, debug: bool = True) -> bool:
        """Re-read the registry (and the debug gateway's tools unless `debug` is false) and apply the
        difference; False when the registry was unreachable or nothing changed."""
        async with self._lock:
            try:
                servers = await self._registry.read_servers()
                catalog = await self._registry.read_catalog()
            except JarvisError as exc:
                log.warning("discovery catalog not refreshed: %s", exc)
                return False
            if debug:
                await self._read_debug()
            digest = hashlib.sha256(
                servers.digest
                + b"\0"
                + catalog.digest
                + b"\0"
                + host_fingerprint(servers.views, self._host)
                + b"\0"
                + json.dumps(self._debug_listing, sort_keys=True).encode()
            ).hexdigest()
            if digest == self._digest:
                return False
            self._apply(self._registry_entries(servers.views, catalog.views))
            self._digest = digest
            self._learn_unknown_tools(servers.views)
            return True

    async def _read_debug(self) -> None:
        """The debug gateway's tools, category by category; an unreachable service keeps the last ones."""
        if self._debug is None or "debug" not in self._routes:
            return
        gateway = self._debug
        try:

            async def listing(tool: str) -> Any:
                return await gateway.invoke(tool, "{}", timeout=10.0)

            categories = (await listing("list")).get("categories") or []
            self._debug_listing = list(
                await asyncio.gather(*(listing(f"list:{c['category']}") for c in categories if c.get("category")))
            )
        except (JarvisError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("debug tools not indexed this time: %s", exc)

    def _registry_entries(
        self, servers: tuple[ServerView, ...], catalog: tuple[CatalogEntryView, ...]
    ) -> dict[str, ToolEntry]:
        categories = {entry.name: entry.category for entry in catalog}
        entries: dict[str, ToolEntry] = {}
        # Installed servers first: a catalog entry's tools never shadow an installed server's.
        for entry in [
            *gateway_entries(self._debug_listing),
            *server_entries(servers, categories, self._host),
            *catalog_entries(catalog, {server.name for server in servers}),
        ]:
            if entry.name in self._routes:
                continue  # a Jarvis tool's name is never taken by a downstream one
            entries.setdefault(entry.name, entry)
        return entries

    def _apply(self, entries: dict[str, ToolEntry]) -> None:
        gone = self._registry_names - entries.keys()
        removed = self.index.remove(gone)
        changed = self.index.upsert(entries.values())
        self._registry_names = set(entries)
        if removed or changed:
            log.info(
                "discovery catalog updated", extra={"removed": removed, "changed": changed, "tools": len(self.index)}
            )

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(self._refresh_seconds)
            try:
                await self.refresh()
            except Exception:  # a bad catalog entry must not stop refreshes for good
                log.exception("discovery catalog refresh failed")
