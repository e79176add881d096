"""Translation between domain records and protobuf messages; no rules live here."""

from __future__ import annotations

from dataclasses import asdict

from jarvis.api.runtime.v1 import runtime_pb2 as pb
from jarvis.common.protobuf import timestamp
from jarvis.runtime.domain import models
from jarvis.runtime.domain.presets import AgentPreset
from jarvis.runtime.domain.secrets import SecretInfo


def container_to_pb(c: models.ContainerInfo) -> pb.Container:
    return pb.Container(id=c.id, name=c.name, image=c.image, state=c.state, user=c.user, network=c.network)


def project_to_pb(p: models.Project) -> pb.Project:
    return pb.Project(
        id=p.id,
        name=p.name,
        source_url=p.source_url,
        image=p.image,
        agent_command=p.agent_command,
        agent_protocol=p.agent_protocol,
        agent=p.agent,
        network=p.network,
        git=p.git,
        container=container_to_pb(p.container),
        sessions_running=p.sessions_running,
        workspaces=p.workspaces,
        created_at=timestamp(p.created_at),
        egress_allow=p.egress_allow,
    )


def workspace_to_pb(w: models.Workspace) -> pb.Workspace:
    return pb.Workspace(
        id=w.id,
        project_id=w.project_id,
        kind=w.kind,
        branch=w.branch,
        path=w.path,
        session_id=w.session_id,
        created_at=timestamp(w.created_at),
    )


def session_to_pb(s: models.Session) -> pb.Session:
    return pb.Session(
        id=s.id,
        project_id=s.project_id,
        workspace_id=s.workspace_id,
        state=s.state,
        agent_command=s.agent_command,
        agent_protocol=s.agent_protocol,
        exit_code=s.exit_code,
        events=s.events,
        detail=s.detail,
        created_at=timestamp(s.created_at),
        ended_at=timestamp(s.ended_at),
        idempotency_key=s.idempotency_key,
        agent=s.agent,
    )


def secret_to_pb(s: SecretInfo) -> pb.Secret:
    """A secret's name and dates: there is no field for its value."""
    return pb.Secret(name=s.name, created_at=timestamp(s.created_at), updated_at=timestamp(s.updated_at))


def preset_to_pb(p: AgentPreset) -> pb.AgentPreset:
    return pb.AgentPreset(
        name=p.name,
        command=p.command,
        protocol=p.protocol,
        prompt=p.prompt,
        key_env=p.key_env,
        base_url_env=p.base_url_env,
        hosts=p.hosts,
        env=p.env,
        description=p.description,
    )


def event_to_pb(e: models.Event) -> pb.Event:
    return pb.Event(seq=e.seq, type=e.type, payload_json=e.payload_json, created_at=timestamp(e.created_at))


def exec_to_pb(r: models.ExecResult) -> pb.ExecResponse:
    return pb.ExecResponse(**asdict(r))


def changes_to_pb(c: models.Changes) -> pb.ProjectChangesResponse:
    return pb.ProjectChangesResponse(**asdict(c))


def build_to_pb(b: models.BuildResult) -> pb.RebuildImageResponse:
    return pb.RebuildImageResponse(**asdict(b))


def limits_to_pb(limits: models.Limits) -> pb.Limits:
    return pb.Limits(**asdict(limits))


def server_launch(start: pb.ServerStart) -> models.ServerLaunch:
    return models.ServerLaunch(server=start.server, image=start.image, args=tuple(start.args), env=dict(start.env))


def server_started_to_pb(s: models.ServerStarted) -> pb.ServerOutput:
    return pb.ServerOutput(
        started=pb.ServerStarted(container_id=s.container_id, container_name=s.container_name, image=s.image)
    )


def server_output_to_pb(event: models.ServerOutput | models.ServerExited) -> pb.ServerOutput:
    if isinstance(event, models.ServerExited):
        return pb.ServerOutput(exited=pb.ServerExited(**asdict(event)))
    return pb.ServerOutput(stdout=event.data) if event.stream == "stdout" else pb.ServerOutput(stderr=event.data)


def server_input(message: pb.ServerInput) -> bytes | None:
    """Bytes for the server's stdin, or None: close it. Anything else (a second `start`) writes nothing."""
    kind = message.WhichOneof("input")
    if kind == "close_stdin" and message.close_stdin:
        return None
    return message.stdin if kind == "stdin" else b""
