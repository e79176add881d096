"""RuntimeService over gRPC: unpack the request, call the domain, pack the answer. Nothing else."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TypeAlias

import grpc

from jarvis.api.runtime.v1 import runtime_pb2 as pb
from jarvis.api.runtime.v1 import runtime_pb2_grpc as pb_grpc
from jarvis.common.errors import InvalidArgument
from jarvis.runtime import convert
from jarvis.runtime.app import Runtime
from jarvis.runtime.domain import agents
from jarvis.runtime.domain.models import PROTOCOLS
from jarvis.runtime.domain.presets import PRESETS
from jarvis.runtime.domain.validate import SOURCE_SCHEMES

Ctx: TypeAlias = grpc.ServicerContext
log = logging.getLogger(__name__)


class RuntimeServicer(pb_grpc.RuntimeServiceServicer):
    """Domain errors propagate; the server's interceptor maps them to status codes in one place.

    Calls that need the engine first make sure the runtime has reconciled with it.
    """

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime

    def _engine(self) -> Runtime:
        self._rt.ensure_reconciled()
        return self._rt

    # ------------------------------------------------------------ projects

    def CreateProject(self, request: pb.CreateProjectRequest, context: Ctx) -> pb.Project:
        project = self._engine().projects.create(
            request.name,
            request.source_url,
            request.image,
            list(request.agent_command),
            request.agent_protocol,
            request.network,
            list(request.egress_allow),
            request.agent,
            created_by=request.created_by,
            uncapped=request.uncapped,
        )
        return convert.project_to_pb(project)

    def ListProjects(self, request: pb.ListProjectsRequest, context: Ctx) -> pb.ListProjectsResponse:
        return pb.ListProjectsResponse(projects=[convert.project_to_pb(p) for p in self._rt.projects.all()])

    def GetProject(self, request: pb.ProjectRef, context: Ctx) -> pb.Project:
        return convert.project_to_pb(self._rt.projects.get(request.project_id))

    def DeleteProject(self, request: pb.ProjectRef, context: Ctx) -> pb.DeleteProjectResponse:
        done = self._engine().projects.delete(request.project_id)
        return pb.DeleteProjectResponse(
            project_id=done.project_id,
            sessions_ended=done.sessions_ended,
            workspaces_removed=done.workspaces_removed,
            container_removed=done.container_removed,
        )

    def ProjectOptions(self, request: pb.ProjectOptionsRequest, context: Ctx) -> pb.ProjectOptionsResponse:
        s = self._rt.settings
        reachable, detail = self._rt.docker_status()
        default = agents.choose("", [], "", s)
        return pb.ProjectOptionsResponse(
            default_image=s.image,
            default_agent_command=default.command,
            agent_protocols=list(PROTOCOLS),
            source_schemes=list(SOURCE_SCHEMES),
            docker_host=s.docker_host,
            docker_reachable=reachable,
            docker_detail=detail,
            limits=convert.limits_to_pb(self._rt.limits()),
            agents=[convert.preset_to_pb(p) for p in PRESETS.values()],
            default_agent=default.agent,
        )

    def ProjectTasks(self, request: pb.ProjectRef, context: Ctx) -> pb.ProjectTasksResponse:
        return pb.ProjectTasksResponse(
            tasks=[
                pb.ProjectTask(name=t.name, source=t.source, command=t.command)
                for t in self._rt.tasks(request.project_id)
            ]
        )

    def ProjectChanges(self, request: pb.ProjectChangesRequest, context: Ctx) -> pb.ProjectChangesResponse:
        changes = self._rt.workspaces.changes(
            request.project_id, request.workspace_id, request.session_id, request.max_bytes
        )
        return convert.changes_to_pb(changes)

    # ------------------------------------------------------------ secrets

    def SetSecret(self, request: pb.SetSecretRequest, context: Ctx) -> pb.Secret:
        return convert.secret_to_pb(self._rt.secrets.set(request.project_id, request.name, request.value))

    def ListSecrets(self, request: pb.ProjectRef, context: Ctx) -> pb.ListSecretsResponse:
        return pb.ListSecretsResponse(
            secrets=[convert.secret_to_pb(x) for x in self._rt.secrets.list(request.project_id)]
        )

    def DeleteSecret(self, request: pb.SecretRef, context: Ctx) -> pb.Secret:
        return convert.secret_to_pb(self._rt.secrets.delete(request.project_id, request.name))

    # ------------------------------------------------------------ container

    def StartContainer(self, request: pb.ProjectRef, context: Ctx) -> pb.Container:
        return convert.container_to_pb(self._engine().containers.start(request.project_id))

    def StopContainer(self, request: pb.ProjectRef, context: Ctx) -> pb.Container:
        return convert.container_to_pb(self._engine().containers.stop(request.project_id))

    def ContainerLogs(self, request: pb.ContainerLogsRequest, context: Ctx) -> pb.ContainerLogsResponse:
        logs, truncated = self._engine().containers.logs(request.project_id, request.tail, request.since)
        return pb.ContainerLogsResponse(logs=logs, truncated=truncated)

    def Exec(self, request: pb.ExecRequest, context: Ctx) -> pb.ExecResponse:
        result = self._engine().containers.exec(
            request.project_id,
            list(request.argv),
            request.command,
            request.workspace_id,
            request.timeout_seconds,
            request.max_output_bytes,
        )
        return convert.exec_to_pb(result)

    def RebuildImage(self, request: pb.ProjectRef, context: Ctx) -> pb.RebuildImageResponse:
        return convert.build_to_pb(self._engine().rebuild(request.project_id))

    # ------------------------------------------------------------ sessions

    def SpawnSession(self, request: pb.SpawnSessionRequest, context: Ctx) -> pb.Session:
        session = self._engine().sessions.spawn(
            request.project_id,
            request.workspace_id,
            request.prompt,
            request.idempotency_key,
            request.agent,
            dict(request.secret_overrides),
            session_id=request.session_id,
            agent_env=dict(request.agent_env),
        )
        return convert.session_to_pb(session)

    def MessageSession(self, request: pb.MessageSessionRequest, context: Ctx) -> pb.Session:
        session = self._rt.sessions.message(
            request.project_id, request.workspace_id, request.session_id, request.message
        )
        return convert.session_to_pb(session)

    def GetSession(self, request: pb.SessionRef, context: Ctx) -> pb.Session:
        return convert.session_to_pb(self._rt.sessions.get(request.project_id, request.session_id))

    def ListSessions(self, request: pb.ProjectRef, context: Ctx) -> pb.ListSessionsResponse:
        return pb.ListSessionsResponse(
            sessions=[convert.session_to_pb(s) for s in self._rt.sessions.of_project(request.project_id)]
        )

    def EndSession(self, request: pb.SessionRef, context: Ctx) -> pb.Session:
        session = self._engine().sessions.end(request.project_id, request.session_id, force=request.force)
        return convert.session_to_pb(session)

    def SessionEvents(self, request: pb.SessionEventsRequest, context: Ctx) -> pb.SessionEventsResponse:
        page = self._rt.sessions.events(
            request.project_id, request.session_id, request.after, request.limit, request.wait_seconds
        )
        return pb.SessionEventsResponse(
            events=[convert.event_to_pb(e) for e in page.events], next_cursor=page.next_cursor, state=page.state
        )

    def CleanupSessions(self, request: pb.CleanupSessionsRequest, context: Ctx) -> pb.CleanupSessionsResponse:
        removed, ended = self._rt.sessions.cleanup(request.project_id, request.older_than_seconds)
        return pb.CleanupSessionsResponse(removed=removed, ended=ended)

    def RespondToolRequest(self, request: pb.RespondToolRequestRequest, context: Ctx) -> pb.RespondToolRequestResponse:
        self._rt.sessions.respond(
            request.project_id, request.session_id, request.request_id, request.result_json, request.is_error
        )
        return pb.RespondToolRequestResponse(
            session_id=request.session_id, request_id=request.request_id, delivered=True
        )

    # ------------------------------------------------------------ workspaces and limits

    def ListWorkspaces(self, request: pb.ProjectRef, context: Ctx) -> pb.ListWorkspacesResponse:
        return pb.ListWorkspacesResponse(
            workspaces=[convert.workspace_to_pb(w) for w in self._rt.workspaces.list(request.project_id)]
        )

    def DeleteWorkspace(self, request: pb.WorkspaceRef, context: Ctx) -> pb.DeleteWorkspaceResponse:
        return pb.DeleteWorkspaceResponse(
            workspace_id=self._rt.workspaces.delete(request.project_id, request.workspace_id)
        )

    def GetLimits(self, request: pb.GetLimitsRequest, context: Ctx) -> pb.Limits:
        return convert.limits_to_pb(self._rt.limits())

    # ------------------------------------------------------------ MCP server containers

    def AttachServer(self, request_iterator: Iterator[pb.ServerInput], context: Ctx) -> Iterator[pb.ServerOutput]:
        first = next(request_iterator, None)
        if first is None or first.WhichOneof("input") != "start":
            raise InvalidArgument("the first message of AttachServer must be `start` (server, image, args, env)")
        attached = self._engine().servers.attach(convert.server_launch(first.start))
        # The container goes with the call: the callback runs when it ends for any reason (a cancelled
        # call, a caller that died); add_callback is False when the call has already ended.
        if not context.add_callback(attached.close):
            attached.close()
        yield convert.server_started_to_pb(attached.started)
        for event in attached.run(_stdin(request_iterator)):
            yield convert.server_output_to_pb(event)


def _stdin(requests: Iterator[pb.ServerInput]) -> Iterator[bytes | None]:
    """The caller's stdin; the end of its stream ends it, and so does a cancelled call (the callback cleans up)."""
    try:
        for message in requests:
            yield convert.server_input(message)
    except grpc.RpcError:
        return
