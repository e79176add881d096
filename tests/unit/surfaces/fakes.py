"""In-memory backends for the tool handlers: each fake keeps its service's state in dicts and records what it was
asked, and implements the protocol of gateways/protocols.py that `ToolContext` is typed with (mypy checks it
where `context()` builds one). Calls no test needs raise NotImplementedError."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.gateways.registry import ServerEdit
from jarvis.aggregator.gateways.registry_admin import ClientEdit
from jarvis.aggregator.gateways.registry_base import Snapshot
from jarvis.aggregator.gateways.scheduler import ScheduleChanges
from jarvis.aggregator.usage import UsageRecorder
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
    LaunchView,
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
    UsageEventRecord,
    UsageStatView,
)
from jarvis.aggregator.views.runtime import (
    ContainerLogs,
    ContainerView,
    EventView,
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
from jarvis.common.errors import AlreadyExists, InvalidArgument, JarvisError, NotFound
from tests.support.offline_surfaces import NoSystem

SERVING: dict[str, Any] = {"ok": True, "detail": "SERVING", "latency_ms": 0.1}
NOT_SERVING: dict[str, Any] = {"ok": False, "detail": "NOT_SERVING"}
PROJECT_ROOT = Path("/work/project")


class Service:
    """What every fake answers for /readyz and jarvis_check_status: its gRPC health, as set by the test."""

    target = "memory"

    def __init__(self) -> None:
        self.health: dict[str, Any] = dict(SERVING)
        self.calls: list[tuple[str, dict[str, Any]]] = []  # (method, its arguments), in call order

    def asked(self, method: str, **arguments: Any) -> None:
        self.calls.append((method, arguments))

    def called(self, method: str) -> list[dict[str, Any]]:
        return [arguments for name, arguments in self.calls if name == method]

    async def check_health(self, full_name: str, timeout: float) -> dict[str, Any]:
        return self.health


def launch(
    transport: str = "TRANSPORT_STDIO",
    *,
    command: str = "",
    args: list[str] | None = None,
    env: dict[str, str] | None = None,
    url: str = "",
    headers: dict[str, str] | None = None,
    image: str = "",
) -> LaunchView:
    return LaunchView(transport, command, args or [], env or {}, "", url, headers or {}, image)


def server(name: str, launch_view: LaunchView | None = None, *, last_error: str = "") -> ServerView:
    return ServerView(
        name=name,
        description=f"the {name} server",
        launch=launch_view if launch_view is not None else launch(command="npx", args=[name]),
        catalog_name=name,
        profiles=[],
        tools=[],
        status="installed",
        last_error=last_error,
    )


class FakeRegistry(Service):
    """Servers, profiles, config and tokens in dicts; the registry's refusals for unknown names."""

    target = "memory:registry"

    def __init__(self) -> None:
        super().__init__()
        self.servers: dict[str, ServerView] = {}
        self.profiles: dict[str, ProfileView] = {}
        self.config: dict[str, Any] = {"aggregator_url": "http://127.0.0.1:8765", "discovery.default_limit": 5}
        self.tokens: dict[str, TokenView] = {}
        self.doctor_checks = [DoctorCheckView("database", True, "sqlite ok")]
        self.doctor_error: JarvisError | None = None
        self.stats: list[UsageStatView] = []
        self.audit_entries: list[AuditEntryView] = []
        self.recorded: list[UsageEventRecord] = []
        self._ids = itertools.count(1)
        self.client_edits: list[ClientEdit] = []
        self.client_edit_error: JarvisError | None = None  # what the next client edit is refused with

    def add(self, *servers: ServerView) -> None:
        self.servers.update((s.name, s) for s in servers)

    def _server(self, name: str) -> ServerView:
        if name not in self.servers:
            raise NotFound(f"server '{name}' not installed")
        return self.servers[name]

    def _profile(self, name: str) -> ProfileView:
        if name not in self.profiles:
            raise NotFound(f"profile '{name}' not found; jarvis_profile action=list shows the existing profiles")
        return self.profiles[name]

    def _installed(self, names: Iterable[str]) -> None:
        unknown = [n for n in names if n not in self.servers]
        if unknown:
            raise NotFound(f"server(s) {', '.join(unknown)} not installed; install them first")

    # Usage (the UsageRecorder's sink)

    async def record_usage(self, events: Iterable[UsageEventRecord]) -> None:
        self.recorded.extend(events)

    # Profiles

    async def list_profiles(self) -> list[ProfileView]:
        return list(self.profiles.values())

    async def get_profile(self, name: str) -> ProfileView:
        return self._profile(name)

    async def create_profile(self, name: str, description: str, servers: list[str]) -> ProfileView:
        self.asked("create_profile", name=name, description=description, servers=servers)
        if name in self.profiles:
            raise AlreadyExists(f"profile '{name}' already exists")
        self._installed(servers)
        self.profiles[name] = ProfileView(name, description, sorted(servers))
        return self.profiles[name]

    async def edit_profile(
        self,
        name: str,
        *,
        add: list[str],
        remove: list[str],
        new_name: str | None = None,
        description: str | None = None,
    ) -> ProfileView:
        self.asked("edit_profile", name=name, add=add, remove=remove, new_name=new_name, description=description)
        profile = self._profile(name)
        self._installed(add)
        servers = sorted((set(profile.servers) | set(add)) - set(remove))
        edited = ProfileView(new_name or name, profile.description if description is None else description, servers)
        del self.profiles[name]
        self.profiles[edited.name] = edited
        return edited

    async def delete_profile(self, name: str) -> ProfileDeleted:
        self.asked("delete_profile", name=name)
        self._profile(name)
        del self.profiles[name]
        return ProfileDeleted(name, [])

    async def suggest_profiles(self, project_dir: str) -> ProfileSuggestions:
        self.asked("suggest_profiles", project_dir=project_dir)
        return ProfileSuggestions([], ["python"], [])

    # Servers

    async def list_servers(self) -> list[ServerView]:
        return list(self.servers.values())

    async def read_servers(self) -> Snapshot[tuple[ServerView, ...]]:
        raise NotImplementedError

    async def read_catalog(self) -> Snapshot[tuple[CatalogEntryView, ...]]:
        raise NotImplementedError

    async def get_server(self, name: str) -> ServerView:
        return self._server(name)

    async def install_server(
        self, catalog_name: str, name: str, env: dict[str, str], directories: list[str] | None = None
    ) -> ServerInstalled:
        raise NotImplementedError

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
        self.asked(
            "create_server",
            name=name,
            description=description,
            transport=transport,
            command=command,
            args=args,
            env=env,
            url=url,
            image=image,
        )
        if name in self.servers:
            raise AlreadyExists(f"server '{name}' already exists")
        wire = "TRANSPORT_" + transport.upper().replace("-", "_")
        created = server(name, launch(wire, command=command, args=args, env=env, url=url, image=image))
        self.servers[name] = replace(created, description=description)
        return self.servers[name]

    async def edit_server(self, edit: ServerEdit) -> ServerView:
        self.asked("edit_server", edit=edit)
        current = self._server(edit.name)
        assert current.launch is not None
        env = {k: v for k, v in {**current.launch.env, **edit.set_env}.items() if k not in edit.unset_env}
        edited = replace(current, launch=replace(current.launch, env=env), name=edit.new_name or edit.name)
        del self.servers[edit.name]
        self.servers[edited.name] = edited
        return edited

    async def uninstall_server(self, name: str) -> ServerUninstalled:
        self.asked("uninstall_server", name=name)
        self._server(name)
        del self.servers[name]
        in_profiles = [p.name for p in self.profiles.values() if name in p.servers]
        return ServerUninstalled(name, in_profiles, [])

    async def search_servers(self, query: str, limit: int = 0) -> list[SearchHitView]:
        raise NotImplementedError

    async def usage(self, tool: str = "") -> list[UsageStatView]:
        self.asked("usage", tool=tool)
        return [s for s in self.stats if not tool or s.tool == tool]

    async def audit(
        self, tool: str, token: str, limit: int, *, before_id: int = 0, since: datetime | None = None
    ) -> list[AuditEntryView]:
        self.asked("audit", tool=tool, token=token, limit=limit)
        return self.audit_entries[:limit]

    async def usage_over_time(self, since: datetime, bucket_seconds: int) -> list[UsageBucketView]:
        raise NotImplementedError

    async def list_tool_pins(self, server: str = "") -> list[ToolPinView]:
        raise NotImplementedError

    async def approve_tool_pins(self, server: str, tools: list[str]) -> list[ToolPinView]:
        raise NotImplementedError

    # Clients

    async def list_clients(self) -> list[ClientView]:
        raise NotImplementedError

    async def edit_client(self, edit: ClientEdit) -> ClientEdited:
        if self.client_edit_error is not None:
            raise self.client_edit_error
        self.client_edits.append(edit)
        added = [*edit.add_servers, *(f"jarvis-{p}" for p in edit.add_profiles), *edit.add_surfaces]
        return ClientEdited(client=None, backup_path="", added=added, removed=[])

    async def import_client(self, name: str) -> ClientImported:
        raise NotImplementedError

    async def client_config_path(self, name: str, path: str | None = None) -> ClientConfigPath:
        raise NotImplementedError

    # Config

    def _entry(self, key: str) -> ConfigEntryView:
        if key not in self.config:
            raise InvalidArgument(f"unknown config key '{key}'")
        return ConfigEntryView(key, self.config[key], default=False, description=f"the {key} setting")

    async def get_config(self, key: str, *, cached: bool = False) -> ConfigEntryView:
        return self._entry(key.strip())

    async def set_config(self, key: str, value: Any) -> ConfigEntryView:
        self.asked("set_config", key=key, value=value)
        self._entry(key.strip())
        self.config[key.strip()] = value
        return self._entry(key.strip())

    async def list_config(self) -> ConfigListing:
        return ConfigListing(version=2, path="/memory/config.yaml", config=[self._entry(k) for k in self.config])

    async def migrate_config(self) -> ConfigMigrated:
        raise NotImplementedError

    # Tokens

    async def create_token(
        self, name: str, scopes: list[str], expires_in_seconds: int = 0, owner: str = ""
    ) -> TokenCreated:
        self.asked("create_token", name=name, scopes=scopes, expires_in_seconds=expires_in_seconds, owner=owner)
        number = next(self._ids)
        token = TokenView(id=f"tok{number}", name=name, prefix=f"jv_{number}", scopes=scopes, owner=owner)
        self.tokens[token.id] = token
        return TokenCreated(token, secret=f"jv_{number}_secret")

    async def list_tokens(self, include_revoked: bool = False, owner: str | None = None) -> list[TokenView]:
        return [
            t
            for t in self.tokens.values()
            if (include_revoked or t.revoked_at is None) and (owner is None or t.owner == owner)
        ]

    async def revoke_token(self, token_id: str, owner: str | None = None) -> TokenView:
        self.asked("revoke_token", token_id=token_id)
        if token_id not in self.tokens or (owner is not None and self.tokens[token_id].owner != owner):
            raise NotFound(f"token '{token_id}' not found")
        self.tokens[token_id] = replace(self.tokens[token_id], revoked_at="2026-01-01T00:00:00Z")
        return self.tokens[token_id]

    # Operations and projects

    async def doctor(self) -> list[DoctorCheckView]:
        if self.doctor_error is not None:
            raise self.doctor_error
        return self.doctor_checks

    async def analyze_project(self, path: str) -> ProjectAnalysis:
        raise NotImplementedError

    async def project_diff(self, path: str, staged: bool) -> ProjectDiff:
        raise NotImplementedError

    async def apply_devops(self, path: str, stack: str, *, force: bool, dry_run: bool) -> DevopsApplied:
        raise NotImplementedError


def project_view(project_id: str, name: str, **fields: Any) -> ProjectView:
    values: dict[str, Any] = {
        "source_url": "",
        "image": "jarvis/agent:latest",
        "agent_command": ["claude"],
        "agent_protocol": "stream-json",
        "network": False,
        "git": False,
        "container": None,
        "sessions_running": 0,
        "workspaces": 0,
        "created_at": None,
        "agent": "claude",
        "egress_allow": [],
    }
    values.update(fields)
    return ProjectView(id=project_id, name=name, **values)


class FakeRuntime(Service):
    """Projects, their secrets (values kept, never shown), sessions and their events."""

    target = "memory:runtime"

    def __init__(self) -> None:
        super().__init__()
        self.projects: dict[str, ProjectView] = {}
        self.secrets: dict[tuple[str, str], str] = {}
        self.sessions: dict[str, SessionView] = {}
        self.events: dict[str, list[EventView]] = {}
        self.docker_reachable = True
        self._ids = itertools.count(1)

    def _project(self, project_id: str) -> ProjectView:
        if project_id not in self.projects:
            raise NotFound(f"project '{project_id}' not found; project action=list shows the ids")
        return self.projects[project_id]

    def _session(self, project_id: str, session_id: str) -> SessionView:
        self._project(project_id)
        found = self.sessions.get(session_id)
        if found is None or found.project_id != project_id:
            raise NotFound(f"session '{session_id}' not found in project '{project_id}'")
        return found

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
    ) -> ProjectView:
        self.asked(
            "create_project",
            name=name,
            source_url=source_url,
            image=image,
            agent_command=agent_command,
            agent_protocol=agent_protocol,
            network=network,
            egress_allow=egress_allow,
            agent=agent,
            created_by=created_by,
            uncapped=uncapped,
        )
        project_id = f"p{next(self._ids)}"
        self.projects[project_id] = project_view(
            project_id,
            name,
            source_url=source_url,
            image=image or "jarvis/agent:latest",
            network=network,
            egress_allow=egress_allow,
            agent=agent or "claude",
            git=bool(source_url),
        )
        return self.projects[project_id]

    async def list_projects(self) -> list[ProjectView]:
        return list(self.projects.values())

    async def get_project(self, project_id: str) -> ProjectView:
        return self._project(project_id)

    async def delete_project(self, project_id: str) -> ProjectDeleted:
        self.asked("delete_project", project_id=project_id)
        self._project(project_id)
        ended = [s for s in self.sessions.values() if s.project_id == project_id]
        for s in ended:
            del self.sessions[s.id]
        del self.projects[project_id]
        return ProjectDeleted(project_id, len(ended), 0, True)

    async def project_options(self, timeout: float | None = None) -> ProjectOptions:
        detail = "Docker answered" if self.docker_reachable else "Docker refused /_ping"
        return ProjectOptions(
            default_image="jarvis/agent:latest",
            default_agent_command=["claude"],
            agent_protocols=["stream-json"],
            source_schemes=["https"],
            docker_host="unix:///var/run/docker.sock",
            docker_reachable=self.docker_reachable,
            docker_detail=detail,
            limits=None,
            agents=[],
            default_agent="claude",
        )

    async def project_tasks(self, project_id: str) -> list[ProjectTaskView]:
        raise NotImplementedError

    async def project_changes(
        self, project_id: str, *, workspace_id: str, session_id: str, max_bytes: int
    ) -> ProjectChanges:
        raise NotImplementedError

    # Secrets

    async def set_secret(self, project_id: str, name: str, value: str) -> SecretView:
        self._project(project_id)
        self.secrets[(project_id, name)] = value
        return SecretView(name, created_at="2026-01-01T00:00:00Z")

    async def list_secrets(self, project_id: str) -> list[SecretView]:
        self._project(project_id)
        return [SecretView(name) for (pid, name) in self.secrets if pid == project_id]

    async def delete_secret(self, project_id: str, name: str) -> SecretView:
        if self.secrets.pop((project_id, name), None) is None:
            raise NotFound(f"secret '{name}' not found in project '{project_id}'")
        return SecretView(name)

    # The project's container

    async def start_container(self, project_id: str) -> ContainerView:
        raise NotImplementedError

    async def stop_container(self, project_id: str) -> ContainerView:
        raise NotImplementedError

    async def container_logs(self, project_id: str, *, tail: int, since: int) -> ContainerLogs:
        raise NotImplementedError

    async def exec(
        self, project_id: str, command: list[str] | str, *, workspace_id: str, timeout: int, max_output: int
    ) -> ExecResult:
        raise NotImplementedError

    async def rebuild_image(self, project_id: str) -> ImageRebuilt:
        raise NotImplementedError

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
    ) -> SessionView:
        self.asked("spawn_session", project_id=project_id, workspace_id=workspace_id, prompt=prompt, agent=agent)
        project = self._project(project_id)
        session_id = session_id or f"s{next(self._ids)}"
        session = SessionView(
            id=session_id,
            project_id=project_id,
            workspace_id=workspace_id or f"w-{session_id}",
            state="running",
            agent_command=project.agent_command,
            agent_protocol=project.agent_protocol,
            exit_code=0,
            events=0,
            detail="",
            created_at="2026-01-01T00:00:00Z",
            ended_at=None,
            idempotency_key="",
            agent=agent or project.agent,
        )
        self.sessions[session_id] = session
        self.events[session_id] = [EventView(1, "started", None, {"prompt": prompt})]
        return session

    async def message_session(
        self, project_id: str, message: str, *, workspace_id: str, session_id: str
    ) -> SessionView:
        raise NotImplementedError

    async def get_session(self, project_id: str, session_id: str) -> SessionView:
        return self._session(project_id, session_id)

    async def list_sessions(self, project_id: str) -> list[SessionView]:
        self._project(project_id)
        return [s for s in self.sessions.values() if s.project_id == project_id]

    async def end_session(self, project_id: str, session_id: str, *, force: bool) -> SessionView:
        self.asked("end_session", project_id=project_id, session_id=session_id, force=force)
        ended = replace(self._session(project_id, session_id), state="ended", ended_at="2026-01-01T00:01:00Z")
        self.sessions[session_id] = ended
        return ended

    async def session_events(
        self, project_id: str, session_id: str, *, after: int, limit: int, wait: float
    ) -> SessionEvents:
        self.asked("session_events", project_id=project_id, session_id=session_id, after=after, limit=limit, wait=wait)
        if not project_id and session_id in self.sessions:  # as the runtime does: the session's id names its project
            project_id = self.sessions[session_id].project_id
        session = self._session(project_id, session_id)
        newer = [e for e in self.events[session_id] if e.seq > after][: limit or None]
        return SessionEvents(newer, newer[-1].seq if newer else after, session.state)

    async def cleanup_sessions(self, project_id: str, *, older_than: int) -> SessionsCleaned:
        raise NotImplementedError

    async def respond_tool_request(
        self, project_id: str, session_id: str, request_id: str, *, result_json: str, is_error: bool
    ) -> ToolResponseDelivered:
        raise NotImplementedError

    # Workspaces and limits

    async def list_workspaces(self, project_id: str) -> list[WorkspaceView]:
        raise NotImplementedError

    async def delete_workspace(self, project_id: str, workspace_id: str) -> WorkspaceDeleted:
        raise NotImplementedError

    async def get_limits(self) -> LimitsView:
        raise NotImplementedError


def schedule_view(schedule_id: str, targets: list[str], **fields: Any) -> ScheduleView:
    values: dict[str, Any] = {
        "name": schedule_id,
        "cron": "0 3 * * *",
        "timezone": "UTC",
        "prompt": "run the tests",
        "enabled": True,
        "concurrency": "skip",
        "missed": "record",
        "created_by": "local",
        "created_at": None,
        "updated_at": None,
        "next_fire_at": None,
        "last_fired_at": None,
        "secret_overrides": {},
    }
    values.update(fields)
    return ScheduleView(id=schedule_id, targets=targets, **values)


def run_view(run_id: str, schedule_id: str, target: str) -> RunView:
    return RunView(
        id=run_id,
        schedule_id=schedule_id,
        target=target,
        tick=None,
        trigger="manual",
        state="queued",
        idempotency_key=run_id,
        session_id="",
        attempts=0,
        error="",
        missed_ticks=0,
        first_missed_tick=None,
        queued_at=None,
        started_at=None,
        session_started_at=None,
        finished_at=None,
    )


class FakeScheduler(Service):
    """Schedules in a dict; its status (mode, queue, workers) as the test sets it."""

    target = "memory:scheduler"

    def __init__(self) -> None:
        super().__init__()
        self.schedules: dict[str, ScheduleView] = {}
        self.status = SchedulerStatus("embedded", 0, 0, {}, 0, "", -1, "embedded: no workers needed")
        self._ids = itertools.count(1)

    def add(self, *schedules: ScheduleView) -> None:
        self.schedules.update((s.id, s) for s in schedules)

    def _detail(self, schedule_id: str) -> ScheduleDetail:
        if schedule_id not in self.schedules:
            raise NotFound(f"schedule '{schedule_id}' not found")
        return ScheduleDetail(self.schedules[schedule_id], ["2026-01-02T03:00:00Z"], [])

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
    ) -> ScheduleDetail:
        self.asked(
            "create_schedule",
            name=name,
            cron=cron,
            timezone=timezone,
            prompt=prompt,
            targets=targets,
            enabled=enabled,
            concurrency=concurrency,
            missed=missed,
            created_by=created_by,
            secret_overrides=dict(secret_overrides),
        )
        schedule_id = f"sch{next(self._ids)}"
        self.add(
            schedule_view(
                schedule_id,
                targets,
                name=name or schedule_id,
                cron=cron,
                timezone=timezone or "UTC",
                prompt=prompt,
                enabled=True if enabled is None else enabled,
                concurrency=concurrency or "skip",
                missed=missed or "record",
                created_by=created_by,
                secret_overrides=dict(secret_overrides),
            )
        )
        return self._detail(schedule_id)

    async def list_schedules(self, target: str = "") -> list[ScheduleView]:
        self.asked("list_schedules", target=target)
        return [s for s in self.schedules.values() if not target or target in s.targets]

    async def get_schedule(self, schedule_id: str) -> ScheduleDetail:
        return self._detail(schedule_id)

    async def update_schedule(self, schedule_id: str, changes: ScheduleChanges) -> ScheduleDetail:
        self.asked("update_schedule", schedule_id=schedule_id, changes=changes)
        current = self._detail(schedule_id).schedule
        assert current is not None
        given = {k: v for k, v in vars(changes).items() if v is not None}
        self.schedules[schedule_id] = replace(current, **given)
        return self._detail(schedule_id)

    async def delete_schedule(self, schedule_id: str) -> ScheduleDeleted:
        self.asked("delete_schedule", schedule_id=schedule_id)
        self._detail(schedule_id)
        del self.schedules[schedule_id]
        return ScheduleDeleted(schedule_id, 0)

    async def trigger_schedule(self, schedule_id: str) -> list[RunView]:
        self.asked("trigger_schedule", schedule_id=schedule_id)
        schedule = self._detail(schedule_id).schedule
        assert schedule is not None
        return [run_view(f"r{n}", schedule_id, t) for n, t in enumerate(schedule.targets, 1)]

    async def get_status(self, timeout: float | None = None) -> SchedulerStatus:
        return self.status


class FakeDebug(Service):
    """The debug service: answers every call with what it was asked."""

    target = "memory:debug"

    async def invoke(self, tool: str, arguments_json: str, timeout: float = 400.0) -> Any:
        self.asked("invoke", tool=tool, arguments_json=arguments_json)
        return {"tool": tool, "ran": True}


def context(
    registry: FakeRegistry,
    *,
    runtime: FakeRuntime | None = None,
    scheduler: FakeScheduler | None = None,
    debug: FakeDebug | None = None,
    auth_mode: str = "loopback-open",
) -> ToolContext:
    """A context over the fakes; a service given as None is not part of this deployment."""
    return ToolContext(
        registry=registry,
        usage=UsageRecorder(registry, flush_interval=3600),
        system=NoSystem(),
        project_root=PROJECT_ROOT,
        started_at=time.time(),
        auth_mode=auth_mode,
        debug=debug,
        runtime=runtime,
        scheduler=scheduler,
        discovery_dense=False,
    )
