"""The aggregator's client of the registry service: deadlines, retries, domain errors."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from jarvis.aggregator.gateways.registry_admin import RegistryAdmin
from jarvis.aggregator.gateways.registry_base import (
    _EVENTS_PER_TURN,
    CATALOG_PAGE,
    SYNC_DEADLINE_SECONDS,
    Snapshot,
)
from jarvis.aggregator.gateways.registry_convert import (
    TRANSPORTS,
    add_usage_event,
    audit_entry_view,
    catalog_entry_view,
    digest,
    profile_view,
    server_view,
    timestamp,
    tool_pin_view,
)
from jarvis.aggregator.views.registry import (
    AuditEntryView,
    CatalogEntryView,
    CatalogImported,
    ProfileDeleted,
    ProfileSuggestion,
    ProfileSuggestions,
    ProfileView,
    SearchHitView,
    ServerInstalled,
    ServerUninstalled,
    ServerView,
    ToolPinView,
    TransportName,
    UsageBucketView,
    UsageEventRecord,
    UsageStatView,
)
from jarvis.api.registry.v1 import registry_pb2


@dataclass(frozen=True)
class ServerEdit:
    """What `edit_server` changes: None leaves a field as it is; `args` given replaces them all."""

    name: str
    new_name: str | None = None
    description: str | None = None
    command: str | None = None
    url: str | None = None
    image: str | None = None
    args: list[str] | None = None
    set_env: dict[str, str] = field(default_factory=dict)
    unset_env: list[str] = field(default_factory=list)
    set_headers: dict[str, str] = field(default_factory=dict)
    unset_headers: list[str] = field(default_factory=list)


class RegistryGateway(RegistryAdmin):
    """Calls the registry; answers hot reads (the server list every agent asks for) from a short cache.

    A write made through this client drops the cache at once; a write made elsewhere (the CLI,
    another aggregator replica) is seen within `read_cache_seconds`.
    """

    # Profiles

    async def list_profiles(self) -> list[ProfileView]:
        response = await self._call(self._registry.ListProfiles, registry_pb2.ListProfilesRequest())
        return [profile_view(p) for p in response.profiles]

    async def get_profile(self, name: str) -> ProfileView:
        return profile_view(await self._call(self._registry.GetProfile, registry_pb2.GetProfileRequest(name=name)))

    async def create_profile(self, name: str, description: str, servers: list[str]) -> ProfileView:
        request = registry_pb2.CreateProfileRequest(name=name, description=description, servers=servers)
        return profile_view(await self._call(self._registry.CreateProfile, request))

    async def edit_profile(
        self,
        name: str,
        *,
        add: list[str],
        remove: list[str],
        new_name: str | None = None,
        description: str | None = None,
    ) -> ProfileView:
        request = registry_pb2.EditProfileRequest(
            name=name, add_servers=add, remove_servers=remove, new_name=new_name, description=description
        )
        return profile_view(await self._call(self._registry.EditProfile, request))

    async def delete_profile(self, name: str) -> ProfileDeleted:
        response = await self._call(self._registry.DeleteProfile, registry_pb2.DeleteProfileRequest(name=name))
        return ProfileDeleted(name=response.name, removed_from_clients=list(response.removed_from_clients))

    async def suggest_profiles(self, project_dir: str) -> ProfileSuggestions:
        request = registry_pb2.SuggestProfilesRequest(project_dir=project_dir)
        response = await self._call(self._registry.SuggestProfiles, request)
        return ProfileSuggestions(
            suggestions=[
                ProfileSuggestion(name=s.name, servers=list(s.servers), reasons=list(s.reasons), exists=s.exists)
                for s in response.suggestions
            ],
            detected=list(response.detected),
            clients_detected=list(response.clients_detected),
        )

    # Servers

    async def list_servers(self) -> list[ServerView]:
        """The installed servers, from the read cache (every agent asks for them)."""
        request = registry_pb2.ListServersRequest()
        views = await self.cached(self._registry.ListServers, request, lambda r: tuple(map(server_view, r.servers)))
        return list(views)

    async def read_servers(self) -> Snapshot[tuple[ServerView, ...]]:
        """The installed servers as the registry has them now (not from the read cache)."""
        response = await self._call(
            self._registry.ListServers, registry_pb2.ListServersRequest(), SYNC_DEADLINE_SECONDS
        )
        return Snapshot(digest(response), lambda: tuple(map(server_view, response.servers)))

    async def read_catalog(self) -> Snapshot[tuple[CatalogEntryView, ...]]:
        """The whole catalog, read now in pages."""
        whole = registry_pb2.ListCatalogResponse()
        while True:
            request = registry_pb2.ListCatalogRequest(limit=CATALOG_PAGE, offset=len(whole.entries))
            page = await self._call(self._registry.ListCatalog, request, SYNC_DEADLINE_SECONDS)
            whole.entries.extend(page.entries)
            if not page.entries or len(whole.entries) >= page.total:
                whole.total = len(whole.entries)
                return Snapshot(digest(whole), lambda: tuple(map(catalog_entry_view, whole.entries)))

    async def import_catalog(self, content: bytes, source: str, fmt: str = "") -> CatalogImported:
        """Add or update catalog entries from a server.json or LiveMCPBench file (`fmt` empty: detected)."""
        request = registry_pb2.ImportCatalogRequest(content=content, source=source, format=fmt)
        r = await self._call(self._registry.ImportCatalog, request)
        return CatalogImported(imported=r.imported, updated=r.updated, skipped=list(r.skipped), format=r.format)

    async def get_server(self, name: str) -> ServerView:
        return server_view(await self._call(self._registry.GetServer, registry_pb2.GetServerRequest(name=name)))

    async def install_server(
        self, catalog_name: str, name: str, env: dict[str, str], directories: list[str] | None = None
    ) -> ServerInstalled:
        request = registry_pb2.InstallServerRequest(
            catalog_name=catalog_name, name=name, env=env, directories=directories or []
        )
        response = await self._call(self._registry.InstallServer, request)
        return ServerInstalled(server_view(response), response.note)

    async def create_server(
        self,
        name: str,
        description: str,
        transport: TransportName,
        *,
        command: str,
        args: list[str],
        env: dict[str, str],
        url: str,
        image: str,
    ) -> ServerView:
        launch = registry_pb2.LaunchSpec(
            transport=TRANSPORTS[transport], command=command, args=args, env=env, url=url, image=image
        )
        request = registry_pb2.CreateServerRequest(name=name, description=description, launch=launch)
        return server_view(await self._call(self._registry.CreateServer, request))

    async def edit_server(self, edit: ServerEdit) -> ServerView:
        request = registry_pb2.EditServerRequest(
            name=edit.name,
            new_name=edit.new_name,
            description=edit.description,
            command=edit.command,
            url=edit.url,
            image=edit.image,
            args=edit.args or [],
            replace_args=edit.args is not None,
            set_env=edit.set_env,
            unset_env=edit.unset_env,
            set_headers=edit.set_headers,
            unset_headers=edit.unset_headers,
        )
        return server_view(await self._call(self._registry.EditServer, request))

    async def uninstall_server(self, name: str) -> ServerUninstalled:
        request = registry_pb2.UninstallServerRequest(name=name)
        response = await self._call(self._registry.UninstallServer, request)
        return ServerUninstalled(
            name=response.name,
            removed_from_profiles=list(response.removed_from_profiles),
            removed_from_clients=list(response.removed_from_clients),
        )

    async def search_servers(self, query: str, limit: int = 0) -> list[SearchHitView]:
        request = registry_pb2.SearchServersRequest(query=query, limit=limit)
        response = await self._call(self._registry.SearchServers, request)
        return [
            SearchHitView(
                name=h.name,
                description=h.description,
                installed=h.installed,
                score=h.score,
                matched_tools=list(h.matched_tools),
            )
            for h in response.hits
        ]

    # Usage and audit

    async def usage(self, tool: str = "") -> list[UsageStatView]:
        response = await self._call(self._registry.GetUsage, registry_pb2.GetUsageRequest(tool=tool))
        return [
            UsageStatView(
                tool=s.tool,
                action=s.action,
                calls=s.calls,
                errors=s.errors,
                avg_latency_ms=s.avg_latency_ms,
                max_latency_ms=s.max_latency_ms,
                last_called_at=timestamp(s, "last_called_at"),
            )
            for s in response.stats
        ]

    async def record_usage(self, events: Iterable[UsageEventRecord]) -> None:
        # Built on the event loop a few hundred at a time, letting requests in flight run between. All at once, a
        # batch of thousands stopped them for ~90 ms; in a thread, the loop waited for the GIL (up to the 5 ms
        # switch interval) at each of its system calls while the thread held it, and the usage pipeline was most of
        # a busy worker's p99 (docs/decisions/0048-usage-pipeline-gil-heap.md).
        request = registry_pb2.RecordUsageRequest()
        for built, record in enumerate(events, 1):
            add_usage_event(request.events, record)
            if built % _EVENTS_PER_TURN == 0:
                await asyncio.sleep(0)
        await self._call(self._registry.RecordUsage, request)

    async def usage_over_time(self, since: datetime, bucket_seconds: int) -> list[UsageBucketView]:
        """The audit log's calls since `since`, counted per bucket, tool, action and target, oldest first."""
        request = registry_pb2.GetUsageOverTimeRequest(bucket_seconds=bucket_seconds)
        request.since.FromDatetime(since if since.tzinfo else since.replace(tzinfo=UTC))
        response = await self._call(self._registry.GetUsageOverTime, request)
        return [
            UsageBucketView(
                start=timestamp(b, "start") or "",
                tool=b.tool,
                action=b.action,
                target=b.target,
                calls=b.calls,
                errors=b.errors,
                latency_bins=dict(b.latency_bins),
            )
            for b in response.buckets
        ]

    async def audit(
        self, tool: str, token: str, limit: int, *, before_id: int = 0, since: datetime | None = None
    ) -> list[AuditEntryView]:
        """Entries newest first: of `tool` and `token` when given, older than entry `before_id` (a page's last)."""
        request = registry_pb2.ListAuditRequest(tool=tool, token=token, limit=limit, before_id=before_id)
        if since is not None:
            request.since.FromDatetime(since if since.tzinfo else since.replace(tzinfo=UTC))
        return [audit_entry_view(e) for e in (await self._call(self._registry.ListAudit, request)).entries]

    # Tool pins

    async def list_tool_pins(self, server: str = "") -> list[ToolPinView]:
        request = registry_pb2.ListToolPinsRequest(server=server)
        return [tool_pin_view(p) for p in (await self._call(self._registry.ListToolPins, request)).pins]

    async def approve_tool_pins(self, server: str, tools: list[str]) -> list[ToolPinView]:
        """Accept the changed definitions of `server`'s quarantined tools (all of them when `tools` is empty)."""
        request = registry_pb2.ApproveToolPinsRequest(server=server, tools=tools)
        return [tool_pin_view(p) for p in (await self._call(self._registry.ApproveToolPins, request)).pins]

    async def record_tool_pins(self, server: str, definitions: dict[str, str]) -> list[ToolPinView]:
        """Record the definitions (tool name -> pinned JSON) a server serves now; the registry pins new tools and
        quarantines changed ones, and answers every pin of the server."""
        request = registry_pb2.RecordToolPinsRequest(
            server=server,
            tools=[registry_pb2.ToolDefinition(name=n, definition_json=d) for n, d in definitions.items()],
        )
        return [tool_pin_view(p) for p in (await self._call(self._registry.RecordToolPins, request)).pins]
