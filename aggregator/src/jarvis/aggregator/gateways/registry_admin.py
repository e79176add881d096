"""The registry's administrative calls: clients, config, tokens, the doctor and project analysis."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from jarvis.aggregator.gateways.registry_base import (
    RegistryBase,
)
from jarvis.aggregator.gateways.registry_convert import (
    client_view,
    config_view,
    to_dict,
    token_view,
)
from jarvis.aggregator.views.registry import (
    ClientConfigPath,
    ClientEdited,
    ClientImported,
    ClientView,
    ConfigEntryView,
    ConfigListing,
    ConfigMigrated,
    DevopsApplied,
    DoctorCheckView,
    ProjectAnalysis,
    ProjectDiff,
    TokenCreated,
    TokenView,
)
from jarvis.api.registry.v1 import project_pb2, registry_pb2


@dataclass(frozen=True)
class ClientEdit:
    name: str
    add_servers: list[str]
    add_profiles: list[str]
    remove_servers: list[str]
    remove_profiles: list[str]
    authorization: str = ""
    path: str | None = None  # another config file of the client's format, for this edit only
    add_surfaces: list[str] = field(default_factory=list)  # Jarvis's own: jarvis, discovery, orchestrator, debug
    remove_surfaces: list[str] = field(default_factory=list)


class RegistryAdmin(RegistryBase):
    async def bootstrap(self, restore: bool = False) -> dict[str, Any]:
        """Seed the catalog and defaults (idempotent); `restore` brings back bundled entries that were removed."""
        return to_dict(await self._call(self._registry.Bootstrap, registry_pb2.BootstrapRequest(restore=restore)))

    # Clients

    async def list_clients(self) -> list[ClientView]:
        response = await self._call(self._registry.ListClients, registry_pb2.ListClientsRequest())
        return [client_view(c) for c in response.clients]

    async def edit_client(self, edit: ClientEdit) -> ClientEdited:
        request = registry_pb2.EditClientRequest(
            name=edit.name,
            add_servers=edit.add_servers,
            add_profiles=edit.add_profiles,
            remove_servers=edit.remove_servers,
            remove_profiles=edit.remove_profiles,
            path=edit.path,
            authorization=edit.authorization,
            add_surfaces=edit.add_surfaces,
            remove_surfaces=edit.remove_surfaces,
        )
        response = await self._call(self._registry.EditClient, request)
        return ClientEdited(
            client=client_view(response.client) if response.HasField("client") else None,
            backup_path=response.backup_path,
            added=list(response.added),
            removed=list(response.removed),
            notes=list(response.notes),
        )

    async def import_client(self, name: str) -> ClientImported:
        response = await self._call(self._registry.ImportClient, registry_pb2.ImportClientRequest(name=name))
        return ClientImported(imported=list(response.imported), skipped=list(response.skipped))

    async def client_config_path(self, name: str, path: str | None = None) -> ClientConfigPath:
        """The client's config path; `path` set changes it ("" goes back to the default location)."""
        request = registry_pb2.ClientConfigPathRequest(name=name, path=path)
        response = await self._call(self._registry.ClientConfigPath, request)
        return ClientConfigPath(name=response.name, path=response.path, custom=response.custom, exists=response.exists)

    # Config

    async def get_config(self, key: str, *, cached: bool = False) -> ConfigEntryView:
        request = registry_pb2.GetConfigRequest(key=key)
        method = self._registry.GetConfig
        return (
            await self.cached(method, request, config_view)
            if cached
            else config_view(await self._call(method, request))
        )

    async def set_config(self, key: str, value: Any) -> ConfigEntryView:
        request = registry_pb2.SetConfigRequest(key=key, value_json=json.dumps(value))
        return config_view(await self._call(self._registry.SetConfig, request))

    async def list_config(self) -> ConfigListing:
        response = await self._call(self._registry.ListConfig, registry_pb2.ListConfigRequest())
        return ConfigListing(
            version=response.version, path=response.path, config=[config_view(e) for e in response.entries]
        )

    async def migrate_config(self) -> ConfigMigrated:
        response = await self._call(self._registry.MigrateConfig, registry_pb2.MigrateConfigRequest())
        return ConfigMigrated(
            from_version=response.from_version,
            to_version=response.to_version,
            backup_path=response.backup_path,
            changes=list(response.changes),
        )

    # Tokens

    async def create_token(
        self, name: str, scopes: list[str], expires_in_seconds: int = 0, owner: str = ""
    ) -> TokenCreated:
        request = registry_pb2.CreateTokenRequest(
            name=name, scopes=scopes, expires_in_seconds=expires_in_seconds, owner=owner
        )
        response = await self._call(self._registry.CreateToken, request)
        return TokenCreated(token=token_view(response.token), secret=response.secret)

    async def list_tokens(self, include_revoked: bool = False, owner: str | None = None) -> list[TokenView]:
        request = registry_pb2.ListTokensRequest(include_revoked=include_revoked, owner=owner)
        return [token_view(t) for t in (await self._call(self._registry.ListTokens, request)).tokens]

    async def revoke_token(self, token_id: str, owner: str | None = None) -> TokenView:
        request = registry_pb2.RevokeTokenRequest(id=token_id, owner=owner)
        return token_view(await self._call(self._registry.RevokeToken, request))

    async def verify_token(self, secret: str) -> TokenView:
        return token_view(await self._call(self._registry.VerifyToken, registry_pb2.VerifyTokenRequest(secret=secret)))

    # Operations

    async def doctor(self) -> list[DoctorCheckView]:
        response = await self._call(self._registry.Doctor, registry_pb2.DoctorRequest())
        return [DoctorCheckView(name=c.name, ok=c.ok, detail=c.detail) for c in response.checks]

    # Projects

    async def analyze_project(self, path: str) -> ProjectAnalysis:
        r = await self._call(self._project.Analyze, project_pb2.AnalyzeRequest(path=path))
        return ProjectAnalysis(
            path=r.path,
            languages=list(r.languages),
            frameworks=list(r.frameworks),
            package_managers=list(r.package_managers),
            configs=list(r.configs),
            test_frameworks=list(r.test_frameworks),
            is_git_repo=r.is_git_repo,
            git_branch=r.git_branch,
            file_counts=dict(r.file_counts),
        )

    async def project_diff(self, path: str, staged: bool) -> ProjectDiff:
        r = await self._call(self._project.Diff, project_pb2.DiffRequest(path=path, staged=staged))
        return ProjectDiff(branch=r.branch, status=r.status, diff=r.diff, truncated=r.truncated, files=list(r.files))

    async def apply_devops(self, path: str, stack: str, *, force: bool, dry_run: bool) -> DevopsApplied:
        request = project_pb2.ApplyDevopsRequest(path=path, stack=stack, force=force, dry_run=dry_run)
        r = await self._call(self._project.ApplyDevops, request)
        return DevopsApplied(stack=r.stack, written=list(r.written), skipped=list(r.skipped))
