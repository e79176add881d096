"""The aggregator's client of the runtime service: deadlines, retries for idempotent calls, domain errors."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from jarvis.aggregator.gateways.client import ServiceClient
from jarvis.aggregator.gateways.registry_convert import timestamp
from jarvis.aggregator.gateways.server_pipe import ServerPipe
from jarvis.aggregator.views.runtime import (
    AgentPresetView,
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
from jarvis.api.runtime.v1 import runtime_pb2 as pb
from jarvis.api.runtime.v1 import runtime_pb2_grpc
from jarvis.common.grpc_client import aio_channel
from jarvis.common.internal_plane import InternalPlane

RUNTIME_SERVICE = "jarvis.api.runtime.v1.RuntimeService"

# Deadlines of the calls that outlive the default few seconds; each goes through the channel without a
# retry policy (whose service config caps calls at 120 s) and is never replayed.
CREATE_TIMEOUT = 400.0  # a clone may take the runtime's clone limit (300 s by default)
CONTAINER_TIMEOUT = 120.0  # start, stop, delete: Docker may be slow to stop a busy container
SPAWN_TIMEOUT = 180.0  # may start the container and check out a worktree first
END_TIMEOUT = 120.0
BUILD_TIMEOUT = 1900.0  # the runtime's build limit (1800 s) and a margin
EXEC_TIMEOUT_MARGIN = 30.0  # on top of the command's own limit: killing it and reading its exit code
DEFAULT_EXEC_DEADLINE = 1830.0  # the runtime's longest exec (1800 s) plus the margin
EVENTS_MARGIN = 30.0  # on top of the time an events call may wait for a new event

# Reads and idempotent changes may be replayed when the runtime restarts; creates, execs and messages never.
IDEMPOTENT = {
    RUNTIME_SERVICE: [
        "ListProjects",
        "GetProject",
        "ProjectOptions",
        "ProjectTasks",
        "ProjectChanges",
        "StartContainer",
        "StopContainer",
        "ContainerLogs",
        "GetSession",
        "ListSessions",
        "SessionEvents",
        "ListWorkspaces",
        "GetLimits",
    ],
}


class RuntimeGateway(ServiceClient):
    """Calls the runtime; its errors come back as the domain errors they stand for."""

    service = "runtime"
    # Calls that run git or a command in a project's container, or write to an agent; the longest
    # (create, exec, spawn, build) pass their own deadline.
    slow: ClassVar[dict[str, float]] = {
        "ProjectOptions": 15.0,
        "ProjectTasks": 30.0,
        "ProjectChanges": 30.0,
        "MessageSession": 30.0,
        "RespondToolRequest": 30.0,
        "ContainerLogs": 15.0,
    }

    def __init__(self, target: str, plane: InternalPlane | None = None) -> None:
        super().__init__(target, IDEMPOTENT, plane)
        self._runtime = runtime_pb2_grpc.RuntimeServiceStub(self._channel)
        # The retry policy's service config also caps every call at 120 s; exec, spawn, clone and build may
        # need longer, so they go through a channel without one (and are never replayed).
        self._long_channel = aio_channel(target, {}, self.plane)
        self._long = runtime_pb2_grpc.RuntimeServiceStub(self._long_channel)

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
        """`created_by` (a token id) owns the project; unless `uncapped`, the runtime's per-token caps apply to it."""
        request = pb.CreateProjectRequest(
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
        return project_view(await self._call(self._long.CreateProject, request, timeout=CREATE_TIMEOUT))

    async def list_projects(self) -> list[ProjectView]:
        response = await self._call(self._runtime.ListProjects, pb.ListProjectsRequest())
        return [project_view(p) for p in response.projects]

    async def get_project(self, project_id: str) -> ProjectView:
        return project_view(await self._call(self._runtime.GetProject, pb.ProjectRef(project_id=project_id)))

    async def delete_project(self, project_id: str) -> ProjectDeleted:
        ref = pb.ProjectRef(project_id=project_id)
        r = await self._call(self._long.DeleteProject, ref, timeout=CONTAINER_TIMEOUT)
        return ProjectDeleted(r.project_id, r.sessions_ended, r.workspaces_removed, r.container_removed)

    async def project_options(self, timeout: float | None = None) -> ProjectOptions:
        r = await self._call(self._runtime.ProjectOptions, pb.ProjectOptionsRequest(), timeout=timeout)
        return ProjectOptions(
            default_image=r.default_image,
            default_agent_command=list(r.default_agent_command),
            agent_protocols=list(r.agent_protocols),
            source_schemes=list(r.source_schemes),
            docker_host=r.docker_host,
            docker_reachable=r.docker_reachable,
            docker_detail=r.docker_detail,
            limits=limits_view(r.limits) if r.HasField("limits") else None,
            agents=[agent_preset_view(a) for a in r.agents],
            default_agent=r.default_agent,
        )

    async def project_tasks(self, project_id: str) -> list[ProjectTaskView]:
        response = await self._call(self._runtime.ProjectTasks, pb.ProjectRef(project_id=project_id))
        return [ProjectTaskView(t.name, t.source, list(t.command)) for t in response.tasks]

    async def project_changes(
        self, project_id: str, *, workspace_id: str, session_id: str, max_bytes: int
    ) -> ProjectChanges:
        request = pb.ProjectChangesRequest(
            project_id=project_id, workspace_id=workspace_id, session_id=session_id, max_bytes=max_bytes
        )
        r = await self._call(self._runtime.ProjectChanges, request)
        return ProjectChanges(r.workspace_id, r.branch, list(r.status), r.diff, r.truncated)

    # Secrets (write-only: no view carries a value)

    async def set_secret(self, project_id: str, name: str, value: str) -> SecretView:
        request = pb.SetSecretRequest(project_id=project_id, name=name, value=value)
        return secret_view(await self._call(self._runtime.SetSecret, request))

    async def list_secrets(self, project_id: str) -> list[SecretView]:
        response = await self._call(self._runtime.ListSecrets, pb.ProjectRef(project_id=project_id))
        return [secret_view(s) for s in response.secrets]

    async def delete_secret(self, project_id: str, name: str) -> SecretView:
        request = pb.SecretRef(project_id=project_id, name=name)
        return secret_view(await self._call(self._runtime.DeleteSecret, request))

    # The project's container

    async def start_container(self, project_id: str) -> ContainerView:
        ref = pb.ProjectRef(project_id=project_id)
        return container_view(await self._call(self._long.StartContainer, ref, timeout=CONTAINER_TIMEOUT))

    async def stop_container(self, project_id: str) -> ContainerView:
        ref = pb.ProjectRef(project_id=project_id)
        return container_view(await self._call(self._long.StopContainer, ref, timeout=CONTAINER_TIMEOUT))

    async def container_logs(self, project_id: str, *, tail: int, since: int) -> ContainerLogs:
        request = pb.ContainerLogsRequest(project_id=project_id, tail=tail, since=since)
        r = await self._call(self._runtime.ContainerLogs, request)
        return ContainerLogs(r.logs, r.truncated)

    async def exec(
        self, project_id: str, command: list[str] | str, *, workspace_id: str, timeout: int, max_output: int
    ) -> ExecResult:
        """Run `command` in the project's container: an argv list as is, a string by `sh -c`; `timeout` 0 is
        the runtime's default, and the call waits for the command's own limit plus the time to kill it."""
        argv = command if isinstance(command, list) else []
        request = pb.ExecRequest(
            project_id=project_id,
            argv=argv,
            command=command if isinstance(command, str) else "",
            workspace_id=workspace_id,
            timeout_seconds=timeout,
            max_output_bytes=max_output,
        )
        deadline = timeout + EXEC_TIMEOUT_MARGIN if timeout else DEFAULT_EXEC_DEADLINE
        r = await self._call(self._long.Exec, request, timeout=deadline)
        return ExecResult(r.exit_code, r.stdout, r.stderr, r.timed_out, r.truncated, r.duration_ms)

    async def rebuild_image(self, project_id: str) -> ImageRebuilt:
        ref = pb.ProjectRef(project_id=project_id)
        r = await self._call(self._long.RebuildImage, ref, timeout=BUILD_TIMEOUT)
        return ImageRebuilt(r.build_id, r.image, r.ok, r.error, list(r.log_tail))

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
        request = pb.SpawnSessionRequest(project_id=project_id, workspace_id=workspace_id, prompt=prompt, agent=agent)
        request.session_id = session_id  # a signed-in person's agent: the session its credential names (0057)
        request.agent_env.update(agent_env or {})
        return session_view(await self._call(self._long.SpawnSession, request, timeout=SPAWN_TIMEOUT))

    async def message_session(
        self, project_id: str, message: str, *, workspace_id: str, session_id: str
    ) -> SessionView:
        request = pb.MessageSessionRequest(
            project_id=project_id, workspace_id=workspace_id, session_id=session_id, message=message
        )
        return session_view(await self._call(self._long.MessageSession, request))

    async def get_session(self, project_id: str, session_id: str) -> SessionView:
        ref = pb.SessionRef(project_id=project_id, session_id=session_id)
        return session_view(await self._call(self._runtime.GetSession, ref))

    async def list_sessions(self, project_id: str) -> list[SessionView]:
        response = await self._call(self._runtime.ListSessions, pb.ProjectRef(project_id=project_id))
        return [session_view(s) for s in response.sessions]

    async def end_session(self, project_id: str, session_id: str, *, force: bool) -> SessionView:
        ref = pb.SessionRef(project_id=project_id, session_id=session_id, force=force)
        return session_view(await self._call(self._long.EndSession, ref, timeout=END_TIMEOUT))

    async def session_events(
        self, project_id: str, session_id: str, *, after: int, limit: int, wait: float
    ) -> SessionEvents:
        """Events after the cursor `after`; waits up to `wait` seconds for one when there is none yet."""
        request = pb.SessionEventsRequest(
            project_id=project_id, session_id=session_id, after=after, limit=limit, wait_seconds=wait
        )
        r = await self._call(self._long.SessionEvents, request, timeout=wait + EVENTS_MARGIN)
        return SessionEvents([event_view(e) for e in r.events], r.next_cursor, r.state)

    async def cleanup_sessions(self, project_id: str, *, older_than: int) -> SessionsCleaned:
        request = pb.CleanupSessionsRequest(project_id=project_id, older_than_seconds=older_than)
        r = await self._call(self._long.CleanupSessions, request, timeout=END_TIMEOUT)
        return SessionsCleaned(list(r.removed), list(r.ended))

    async def respond_tool_request(
        self, project_id: str, session_id: str, request_id: str, *, result_json: str, is_error: bool
    ) -> ToolResponseDelivered:
        request = pb.RespondToolRequestRequest(
            project_id=project_id,
            session_id=session_id,
            request_id=request_id,
            result_json=result_json,
            is_error=is_error,
        )
        r = await self._call(self._long.RespondToolRequest, request)
        return ToolResponseDelivered(r.session_id, r.request_id, r.delivered)

    # Workspaces and limits

    async def list_workspaces(self, project_id: str) -> list[WorkspaceView]:
        response = await self._call(self._runtime.ListWorkspaces, pb.ProjectRef(project_id=project_id))
        return [workspace_view(w) for w in response.workspaces]

    async def delete_workspace(self, project_id: str, workspace_id: str) -> WorkspaceDeleted:
        ref = pb.WorkspaceRef(project_id=project_id, workspace_id=workspace_id)
        r = await self._call(self._long.DeleteWorkspace, ref, timeout=CONTAINER_TIMEOUT)
        return WorkspaceDeleted(r.workspace_id)

    async def get_limits(self) -> LimitsView:
        return limits_view(await self._call(self._runtime.GetLimits, pb.GetLimitsRequest()))

    def attach_server(self) -> ServerPipe:
        """A new AttachServer call. No deadline: it lasts as long as the server runs; never replayed: each call is a
        container of its own."""
        return ServerPipe(self._long.AttachServer())

    async def close(self) -> None:
        await super().close()
        await self._long_channel.close()


def container_view(c: pb.Container) -> ContainerView:
    return ContainerView(id=c.id, name=c.name, image=c.image, state=c.state, user=c.user, network=c.network)


def project_view(p: pb.Project) -> ProjectView:
    return ProjectView(
        id=p.id,
        name=p.name,
        source_url=p.source_url,
        image=p.image,
        agent_command=list(p.agent_command),
        agent_protocol=p.agent_protocol,
        network=p.network,
        git=p.git,
        container=container_view(p.container) if p.HasField("container") else None,
        sessions_running=p.sessions_running,
        workspaces=p.workspaces,
        created_at=timestamp(p, "created_at"),
        agent=p.agent,
        egress_allow=list(p.egress_allow),
    )


def limits_view(m: pb.Limits) -> LimitsView:
    return LimitsView(
        memory=m.memory,
        cpus=m.cpus,
        pids=m.pids,
        exec_timeout_seconds=m.exec_timeout_seconds,
        exec_timeout_max_seconds=m.exec_timeout_max_seconds,
        exec_output_max_bytes=m.exec_output_max_bytes,
        session_end_grace_seconds=m.session_end_grace_seconds,
        event_payload_max_bytes=m.event_payload_max_bytes,
        events_page_max=m.events_page_max,
        tmpfs_size=m.tmpfs_size,
        read_only_root=m.read_only_root,
        no_new_privileges=m.no_new_privileges,
        cap_drop=list(m.cap_drop),
        container_user=m.container_user,
    )


def agent_preset_view(a: pb.AgentPreset) -> AgentPresetView:
    return AgentPresetView(
        name=a.name,
        command=list(a.command),
        protocol=a.protocol,
        prompt=a.prompt,
        key_env=list(a.key_env),
        base_url_env=list(a.base_url_env),
        hosts=list(a.hosts),
        env=dict(a.env),
        description=a.description,
    )


def secret_view(s: pb.Secret) -> SecretView:
    return SecretView(name=s.name, created_at=timestamp(s, "created_at"), updated_at=timestamp(s, "updated_at"))


def session_view(s: pb.Session) -> SessionView:
    return SessionView(
        id=s.id,
        project_id=s.project_id,
        workspace_id=s.workspace_id,
        state=s.state,
        agent_command=list(s.agent_command),
        agent_protocol=s.agent_protocol,
        exit_code=s.exit_code,
        events=s.events,
        detail=s.detail,
        created_at=timestamp(s, "created_at"),
        ended_at=timestamp(s, "ended_at"),
        idempotency_key=s.idempotency_key,
        agent=s.agent,
    )


def event_view(e: pb.Event) -> EventView:
    try:
        payload: Any = json.loads(e.payload_json) if e.payload_json else None
    except ValueError:
        payload = e.payload_json
    return EventView(seq=e.seq, type=e.type, created_at=timestamp(e, "created_at"), payload=payload)


def workspace_view(w: pb.Workspace) -> WorkspaceView:
    return WorkspaceView(
        id=w.id,
        project_id=w.project_id,
        kind=w.kind,
        branch=w.branch,
        path=w.path,
        session_id=w.session_id,
        created_at=timestamp(w, "created_at"),
    )
