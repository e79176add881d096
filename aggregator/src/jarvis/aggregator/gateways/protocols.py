"""What the tool handlers ask of each backend service, as protocols: the gateways' methods they call (directly, or
through the status checks, the discovery catalog and the hosting report they hand a gateway to), nothing more.

`ToolContext` is typed with these, so a handler can be given an in-memory fake in a test; the gateways of this
package satisfy them, which mypy checks where the aggregator puts them in its context (app.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

from jarvis.aggregator.gateways.debug import INVOKE_TIMEOUT
from jarvis.aggregator.gateways.registry import ServerEdit
from jarvis.aggregator.gateways.registry_admin import ClientEdit
from jarvis.aggregator.gateways.registry_base import Snapshot
from jarvis.aggregator.gateways.scheduler import ScheduleChanges
from jarvis.aggregator.views.registry import (
    AuditEntryView,
    CatalogEntryView,
    ClientConfigPath,
    ClientEdited,
    ClientImported,
    ClientView,
    ConfigEntryView,
    ConfigListing,
    ConfigMigrated,
    DevopsApplied,
    DoctorCheckView,
    ProfileDeleted,
    ProfileSuggestions,
    ProfileView,
    ProjectAnalysis,
    ProjectDiff,
    SearchHitView,
    ServerInstalled,
    ServerUninstalled,
    ServerView,
    TokenCreated,
    TokenView,
    ToolPinView,
    TransportName,
    UsageBucketView,
    UsageStatView,
)
from jarvis.aggregator.views.runtime import (
    ContainerLogs,
    ContainerView,
    ExecResult,
    ImageRebuilt,
    LimitsView,
    ProjectChanges,
    ProjectDeleted,
    ProjectOptions,
    ProjectTaskView,
    ProjectView,
    SecretView,
    SessionEvents,
    SessionsCleaned,
    SessionView,
    ToolResponseDelivered,
    WorkspaceDeleted,
    WorkspaceView,
)
from jarvis.aggregator.views.scheduler import RunView, ScheduleDeleted, ScheduleDetail, SchedulerStatus, ScheduleView


class ServiceApi(Protocol):
    """What `jarvis_check_status` and /readyz ask of every service (gateways/client.py `ServiceClient`)."""

    @property
    def target(self) -> str: ...

    async def check_health(self, full_name: str, timeout: float) -> dict[str, Any]: ...


class RegistryApi(ServiceApi, Protocol):
    """The registry, as the `jarvis_*` tools, `token`, discovery and the hosting report call it."""

    # Profiles (jarvis_profile)
    async def list_profiles(self) -> list[ProfileView]: ...

    async def get_profile(self, name: str) -> ProfileView: ...

    async def create_profile(self, name: str, description: str, servers: list[str]) -> ProfileView: ...

    async def edit_profile(
        self,
        name: str,
        *,
        add: list[str],
        remove: list[str],
        new_name: str | None = None,
        description: str | None = None,
    ) -> ProfileView: ...

    async def delete_profile(self, name: str) -> ProfileDeleted: ...

    async def suggest_profiles(self, project_dir: str) -> ProfileSuggestions: ...

    # Servers (jarvis_server; the discovery catalog reads them whole)
    async def list_servers(self) -> list[ServerView]: ...

    async def read_servers(self) -> Snapshot[tuple[ServerView, ...]]: ...

    async def read_catalog(self) -> Snapshot[tuple[CatalogEntryView, ...]]: ...

    async def get_server(self, name: str) -> ServerView: ...

    async def install_server(
        self, catalog_name: str, name: str, env: dict[str, str], directories: list[str] | None = None
    ) -> ServerInstalled: ...

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
    ) -> ServerView: ...

    async def edit_server(self, edit: ServerEdit) -> ServerView: ...

    async def uninstall_server(self, name: str) -> ServerUninstalled: ...

    async def search_servers(self, query: str, limit: int = 0) -> list[SearchHitView]: ...

    async def usage(self, tool: str = "") -> list[UsageStatView]: ...

    async def audit(
        self, tool: str, token: str, limit: int, *, before_id: int = 0, since: datetime | None = None
    ) -> list[AuditEntryView]: ...

    async def usage_over_time(self, since: datetime, bucket_seconds: int) -> list[UsageBucketView]: ...

    async def list_tool_pins(self, server: str = "") -> list[ToolPinView]: ...

    async def approve_tool_pins(self, server: str, tools: list[str]) -> list[ToolPinView]: ...

    # Clients (jarvis_client)
    async def list_clients(self) -> list[ClientView]: ...

    async def edit_client(self, edit: ClientEdit) -> ClientEdited: ...

    async def import_client(self, name: str) -> ClientImported: ...

    async def client_config_path(self, name: str, path: str | None = None) -> ClientConfigPath: ...

    # Config (jarvis_config; discovery reads its default limit)
    async def get_config(self, key: str, *, cached: bool = False) -> ConfigEntryView: ...

    async def set_config(self, key: str, value: Any) -> ConfigEntryView: ...

    async def list_config(self) -> ConfigListing: ...

    async def migrate_config(self) -> ConfigMigrated: ...

    # Tokens (token; jarvis_client makes one per client entry where tokens are required)
    async def create_token(
        self, name: str, scopes: list[str], expires_in_seconds: int = 0, owner: str = ""
    ) -> TokenCreated: ...

    async def list_tokens(self, include_revoked: bool = False, owner: str | None = None) -> list[TokenView]: ...

    async def revoke_token(self, token_id: str, owner: str | None = None) -> TokenView: ...

    # Operations (jarvis_check_status) and projects (jarvis_project)
    async def doctor(self) -> list[DoctorCheckView]: ...

    async def analyze_project(self, path: str) -> ProjectAnalysis: ...

    async def project_diff(self, path: str, staged: bool) -> ProjectDiff: ...

    async def apply_devops(self, path: str, stack: str, *, force: bool, dry_run: bool) -> DevopsApplied: ...


class RuntimeApi(ServiceApi, Protocol):
    """The runtime, as the orchestrator's tools call it (and the status check, asking about Docker)."""

    # Projects
    async def create_project(
        self,
        name: str,
        *,
        source_url: str,
        image: str,
        agent_command: list[str],
        agent_protocol: str,
        network: bool,
        egress_allow: list[str],
        agent: str,
        created_by: str = "",
        uncapped: bool = False,
    ) -> ProjectView: ...

    async def list_projects(self) -> list[ProjectView]: ...

    async def get_project(self, project_id: str) -> ProjectView: ...

    async def delete_project(self, project_id: str) -> ProjectDeleted: ...

    async def project_options(self, timeout: float | None = None) -> ProjectOptions: ...

    async def project_tasks(self, project_id: str) -> list[ProjectTaskView]: ...

    async def project_changes(
        self, project_id: str, *, workspace_id: str, session_id: str, max_bytes: int
    ) -> ProjectChanges: ...

    # Secrets
    async def set_secret(self, project_id: str, name: str, value: str) -> SecretView: ...

    async def list_secrets(self, project_id: str) -> list[SecretView]: ...

    async def delete_secret(self, project_id: str, name: str) -> SecretView: ...

    # The project's container
    async def start_container(self, project_id: str) -> ContainerView: ...

    async def stop_container(self, project_id: str) -> ContainerView: ...

    async def container_logs(self, project_id: str, *, tail: int, since: int) -> ContainerLogs: ...

    async def exec(
        self, project_id: str, command: list[str] | str, *, workspace_id: str, timeout: int, max_output: int
    ) -> ExecResult: ...

    async def rebuild_image(self, project_id: str) -> ImageRebuilt: ...

    # Sessions
    async def spawn_session(
        self,
        project_id: str,
        *,
        workspace_id: str,
        prompt: str,
        agent: str,
        session_id: str = "",
        agent_env: dict[str, str] | None = None,
    ) -> SessionView: ...

    async def message_session(
        self, project_id: str, message: str, *, workspace_id: str, session_id: str
    ) -> SessionView: ...

    async def get_session(self, project_id: str, session_id: str) -> SessionView: ...

    async def list_sessions(self, project_id: str) -> list[SessionView]: ...

    async def end_session(self, project_id: str, session_id: str, *, force: bool) -> SessionView: ...

    async def session_events(
        self, project_id: str, session_id: str, *, after: int, limit: int, wait: float
    ) -> SessionEvents: ...

    async def cleanup_sessions(self, project_id: str, *, older_than: int) -> SessionsCleaned: ...

    async def respond_tool_request(
        self, project_id: str, session_id: str, request_id: str, *, result_json: str, is_error: bool
    ) -> ToolResponseDelivered: ...

    # Workspaces and limits
    async def list_workspaces(self, project_id: str) -> list[WorkspaceView]: ...

    async def delete_workspace(self, project_id: str, workspace_id: str) -> WorkspaceDeleted: ...

    async def get_limits(self) -> LimitsView: ...


class SchedulerApi(ServiceApi, Protocol):
    """The scheduler, as the `schedule` tool calls it (and the status check, asking about its workers and queue)."""

    async def create_schedule(
        self,
        *,
        name: str,
        cron: str,
        timezone: str,
        prompt: str,
        targets: list[str],
        enabled: bool | None,
        concurrency: str,
        missed: str,
        created_by: str,
        secret_overrides: Mapping[str, str],
    ) -> ScheduleDetail: ...

    async def list_schedules(self, target: str = "") -> list[ScheduleView]: ...

    async def get_schedule(self, schedule_id: str) -> ScheduleDetail: ...

    async def update_schedule(self, schedule_id: str, changes: ScheduleChanges) -> ScheduleDetail: ...

    async def delete_schedule(self, schedule_id: str) -> ScheduleDeleted: ...

    async def trigger_schedule(self, schedule_id: str) -> list[RunView]: ...

    async def get_status(self, timeout: float | None = None) -> SchedulerStatus: ...


class DebugApi(ServiceApi, Protocol):
    """The debug service, as the `debug` tool and the discovery catalog call it."""

    async def invoke(self, tool: str, arguments_json: str, timeout: float = INVOKE_TIMEOUT) -> Any: ...
