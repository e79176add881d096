"""RegistryService over gRPC: unpack the request, call the domain, pack the answer. Nothing else."""

from __future__ import annotations

from datetime import UTC

import grpc
from google.protobuf.message import Message

from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.api.registry.v1 import registry_pb2_grpc as pb_grpc
from jarvis.common.errors import InvalidArgument
from jarvis.registry import convert
from jarvis.registry.app import Registry
from jarvis.registry.domain.client_links import ClientChange
from jarvis.registry.domain.config.store import parse_value_json
from jarvis.registry.domain.pins import SeenTool
from jarvis.registry.domain.servers import ServerEdit


def _optional(message: Message, field: str) -> str | None:
    """The value of a proto3 `optional` field, or None when the caller left it out."""
    return str(getattr(message, field)) if message.HasField(field) else None


class RegistryServicer(pb_grpc.RegistryServiceServicer):
    """Domain errors propagate; the server's interceptor maps them to status codes in one place."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry

    # ------------------------------------------------------------ servers

    def ListServers(self, request: pb.ListServersRequest, context: grpc.ServicerContext) -> pb.ListServersResponse:
        return pb.ListServersResponse(servers=[convert.server_to_pb(s) for s in self._registry.servers.list()])

    def GetServer(self, request: pb.GetServerRequest, context: grpc.ServicerContext) -> pb.Server:
        return convert.server_to_pb(self._registry.servers.get(request.name))

    def InstallServer(self, request: pb.InstallServerRequest, context: grpc.ServicerContext) -> pb.Server:
        server = self._registry.servers.install(
            request.catalog_name, request.name, dict(request.env), list(request.directories)
        )
        return convert.server_to_pb(server)

    def CreateServer(self, request: pb.CreateServerRequest, context: grpc.ServicerContext) -> pb.Server:
        launch = convert.launch_from_pb(request.launch)
        return convert.server_to_pb(self._registry.servers.create(request.name, request.description, launch))

    def EditServer(self, request: pb.EditServerRequest, context: grpc.ServicerContext) -> pb.Server:
        edit = ServerEdit(
            name=request.name,
            new_name=_optional(request, "new_name"),
            description=_optional(request, "description"),
            command=_optional(request, "command"),
            args=tuple(request.args),
            replace_args=request.replace_args,
            set_env=dict(request.set_env),
            unset_env=tuple(request.unset_env),
            url=_optional(request, "url"),
            image=_optional(request, "image"),
            cwd=_optional(request, "cwd"),
            set_headers=dict(request.set_headers),
            unset_headers=tuple(request.unset_headers),
        )
        return convert.server_to_pb(self._registry.servers.edit(edit))

    def UninstallServer(
        self, request: pb.UninstallServerRequest, context: grpc.ServicerContext
    ) -> pb.UninstallServerResponse:
        done = self._registry.servers.uninstall(request.name)
        return pb.UninstallServerResponse(
            name=done.name,
            removed_from_profiles=done.removed_from_profiles,
            removed_from_clients=done.removed_from_clients,
        )

    def SearchServers(
        self, request: pb.SearchServersRequest, context: grpc.ServicerContext
    ) -> pb.SearchServersResponse:
        hits = self._registry.search(request.query, request.limit, request.installed_only)
        return pb.SearchServersResponse(
            hits=[
                pb.SearchHit(
                    name=h.name,
                    description=h.description,
                    installed=h.installed,
                    score=h.score,
                    matched_tools=h.matched_tools,
                )
                for h in hits
            ]
        )

    # ------------------------------------------------------------ catalog

    def ListCatalog(self, request: pb.ListCatalogRequest, context: grpc.ServicerContext) -> pb.ListCatalogResponse:
        entries, total = self._registry.catalog.list(request.limit, request.offset, request.category)
        return pb.ListCatalogResponse(entries=[convert.catalog_entry_to_pb(e) for e in entries], total=total)

    def GetCatalogEntry(self, request: pb.GetCatalogEntryRequest, context: grpc.ServicerContext) -> pb.CatalogEntry:
        return convert.catalog_entry_to_pb(self._registry.catalog.get(request.name))

    def ImportCatalog(
        self, request: pb.ImportCatalogRequest, context: grpc.ServicerContext
    ) -> pb.ImportCatalogResponse:
        result = self._registry.catalog.import_file(request.content, request.source, request.format)
        return pb.ImportCatalogResponse(
            imported=result.imported,
            updated=result.updated,
            names=result.names,
            skipped=result.skipped,
            format=result.format,
        )

    # ------------------------------------------------------------ profiles

    def ListProfiles(self, request: pb.ListProfilesRequest, context: grpc.ServicerContext) -> pb.ListProfilesResponse:
        return pb.ListProfilesResponse(profiles=[convert.profile_to_pb(p) for p in self._registry.profiles.list()])

    def GetProfile(self, request: pb.GetProfileRequest, context: grpc.ServicerContext) -> pb.Profile:
        return convert.profile_to_pb(self._registry.profiles.get(request.name))

    def CreateProfile(self, request: pb.CreateProfileRequest, context: grpc.ServicerContext) -> pb.Profile:
        profile = self._registry.profiles.create(request.name, request.description, request.servers)
        return convert.profile_to_pb(profile)

    def EditProfile(self, request: pb.EditProfileRequest, context: grpc.ServicerContext) -> pb.Profile:
        profile = self._registry.profiles.edit(
            request.name,
            new_name=_optional(request, "new_name"),
            description=_optional(request, "description"),
            add_servers=request.add_servers,
            remove_servers=request.remove_servers,
        )
        return convert.profile_to_pb(profile)

    def DeleteProfile(
        self, request: pb.DeleteProfileRequest, context: grpc.ServicerContext
    ) -> pb.DeleteProfileResponse:
        done = self._registry.profiles.delete(request.name)
        return pb.DeleteProfileResponse(name=done.name, removed_from_clients=done.removed_from_clients)

    # ------------------------------------------------------------ clients

    def SuggestProfiles(
        self, request: pb.SuggestProfilesRequest, context: grpc.ServicerContext
    ) -> pb.SuggestProfilesResponse:
        found = self._registry.suggest_profiles(request.project_dir)
        return pb.SuggestProfilesResponse(
            suggestions=[
                pb.ProfileSuggestion(
                    name=s.name, servers=list(s.servers), reasons=list(s.reasons), exists=s.name in found.existing
                )
                for s in found.suggestions
            ],
            detected=found.detected,
            clients_detected=found.clients_detected,
        )

    def ListClients(self, request: pb.ListClientsRequest, context: grpc.ServicerContext) -> pb.ListClientsResponse:
        return pb.ListClientsResponse(clients=[convert.client_to_pb(c) for c in self._registry.clients.list()])

    def EditClient(self, request: pb.EditClientRequest, context: grpc.ServicerContext) -> pb.EditClientResponse:
        change = ClientChange(
            add_servers=request.add_servers,
            remove_servers=request.remove_servers,
            add_profiles=request.add_profiles,
            remove_profiles=request.remove_profiles,
            add_surfaces=request.add_surfaces,
            remove_surfaces=request.remove_surfaces,
        )
        path = request.path if request.HasField("path") else None
        result = self._registry.clients.edit(request.name, change, path=path, authorization=request.authorization)
        client = next(c for c in self._registry.clients.list() if c.name == result.client)
        return pb.EditClientResponse(
            client=convert.client_to_pb(client),
            backup_path=result.backup_path or "",
            added=result.added,
            removed=result.removed,
            notes=result.notes,
        )

    def ImportClient(self, request: pb.ImportClientRequest, context: grpc.ServicerContext) -> pb.ImportClientResponse:
        done = self._registry.clients.import_servers(request.name)
        return pb.ImportClientResponse(imported=done.names, skipped=done.skipped)

    def ClientConfigPath(
        self, request: pb.ClientConfigPathRequest, context: grpc.ServicerContext
    ) -> pb.ClientConfigPathResponse:
        info = self._registry.clients.config_path(request.name, _optional(request, "path"))
        return pb.ClientConfigPathResponse(name=info.client, path=info.path, custom=info.custom, exists=info.exists)

    # ------------------------------------------------------------ config

    def GetConfig(self, request: pb.GetConfigRequest, context: grpc.ServicerContext) -> pb.ConfigEntry:
        return convert.config_entry_to_pb(self._registry.config.get(request.key))

    def SetConfig(self, request: pb.SetConfigRequest, context: grpc.ServicerContext) -> pb.ConfigEntry:
        value = parse_value_json(request.key, request.value_json)
        return convert.config_entry_to_pb(self._registry.config.set(request.key, value))

    def ListConfig(self, request: pb.ListConfigRequest, context: grpc.ServicerContext) -> pb.ListConfigResponse:
        config = self._registry.config
        entries = [convert.config_entry_to_pb(v) for v in config.list()]
        return pb.ListConfigResponse(entries=entries, version=config.version(), path=str(config.path))

    def MigrateConfig(
        self, request: pb.MigrateConfigRequest, context: grpc.ServicerContext
    ) -> pb.MigrateConfigResponse:
        done = self._registry.config.migrate()
        return pb.MigrateConfigResponse(
            from_version=done.from_version,
            to_version=done.to_version,
            backup_path=done.backup_path,
            changes=done.changes,
        )

    # ------------------------------------------------------------ tokens

    def CreateToken(self, request: pb.CreateTokenRequest, context: grpc.ServicerContext) -> pb.CreateTokenResponse:
        token, secret = self._registry.tokens.create(
            request.name, request.scopes, request.expires_in_seconds, owner=request.owner
        )
        return pb.CreateTokenResponse(token=convert.token_to_pb(token), secret=secret)

    def ListTokens(self, request: pb.ListTokensRequest, context: grpc.ServicerContext) -> pb.ListTokensResponse:
        owner = request.owner if request.HasField("owner") else None
        tokens = self._registry.tokens.list(request.include_revoked, owner=owner)
        return pb.ListTokensResponse(tokens=[convert.token_to_pb(t) for t in tokens])

    def RevokeToken(self, request: pb.RevokeTokenRequest, context: grpc.ServicerContext) -> pb.Token:
        owner = request.owner if request.HasField("owner") else None
        return convert.token_to_pb(self._registry.tokens.revoke(request.id, owner=owner))

    def VerifyToken(self, request: pb.VerifyTokenRequest, context: grpc.ServicerContext) -> pb.Token:
        return convert.token_to_pb(self._registry.tokens.verify(request.secret))

    # ------------------------------------------------------------ usage

    def RecordUsage(self, request: pb.RecordUsageRequest, context: grpc.ServicerContext) -> pb.RecordUsageResponse:
        recorded = self._registry.usage.record(convert.usage_event_from_pb(e) for e in request.events)
        return pb.RecordUsageResponse(recorded=recorded)

    def GetUsage(self, request: pb.GetUsageRequest, context: grpc.ServicerContext) -> pb.GetUsageResponse:
        stats = self._registry.usage.stats(request.tool)
        return pb.GetUsageResponse(stats=[convert.usage_stat_to_pb(s) for s in stats])

    def GetUsageOverTime(
        self, request: pb.GetUsageOverTimeRequest, context: grpc.ServicerContext
    ) -> pb.GetUsageOverTimeResponse:
        if not request.HasField("since"):
            raise InvalidArgument("since is required: the time the first bucket starts")
        buckets = self._registry.usage.over_time(request.since.ToDatetime(tzinfo=UTC), int(request.bucket_seconds))
        return pb.GetUsageOverTimeResponse(buckets=[convert.usage_bucket_to_pb(b) for b in buckets])

    def ListAudit(self, request: pb.ListAuditRequest, context: grpc.ServicerContext) -> pb.ListAuditResponse:
        since = request.since.ToDatetime(tzinfo=UTC) if request.HasField("since") else None
        entries = self._registry.usage.audit(
            request.tool, request.token, since, request.before_id, request.limit or 100
        )
        return pb.ListAuditResponse(entries=[convert.audit_entry_to_pb(e) for e in entries])

    # ------------------------------------------------------------ operations

    def Bootstrap(self, request: pb.BootstrapRequest, context: grpc.ServicerContext) -> pb.BootstrapResponse:
        done = self._registry.bootstrap(request.restore)
        return pb.BootstrapResponse(
            steps=done.steps,
            catalog_entries=done.catalog_entries,
            profiles_created=done.profiles_created,
            restored=done.restored,
            missing_defaults=done.missing_defaults,
        )

    def Doctor(self, request: pb.DoctorRequest, context: grpc.ServicerContext) -> pb.DoctorResponse:
        checks = self._registry.doctor()
        return pb.DoctorResponse(checks=[pb.DoctorCheck(name=c.name, ok=c.ok, detail=c.detail) for c in checks])

    # ------------------------------------------------------------ tool pins

    def RecordToolPins(self, request: pb.RecordToolPinsRequest, context: grpc.ServicerContext) -> pb.ToolPinsResponse:
        seen = [SeenTool(t.name, t.definition_json) for t in request.tools]
        pins = self._registry.pins.record(request.server, seen)
        return pb.ToolPinsResponse(pins=[convert.tool_pin_to_pb(p) for p in pins])

    def ListToolPins(self, request: pb.ListToolPinsRequest, context: grpc.ServicerContext) -> pb.ToolPinsResponse:
        return pb.ToolPinsResponse(pins=[convert.tool_pin_to_pb(p) for p in self._registry.pins.list(request.server)])

    def ApproveToolPins(self, request: pb.ApproveToolPinsRequest, context: grpc.ServicerContext) -> pb.ToolPinsResponse:
        pins = self._registry.pins.approve(request.server, request.tools)
        return pb.ToolPinsResponse(pins=[convert.tool_pin_to_pb(p) for p in pins])
