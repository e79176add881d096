"""The domain models use cases return, made from storage rows."""

from __future__ import annotations

from jarvis.runtime.domain.layout import ProjectLayout
from jarvis.runtime.domain.models import ContainerInfo, Project, Session, Workspace
from jarvis.runtime.storage.models import ProjectRow, SessionRow, WorkspaceRow


def to_project(row: ProjectRow, container: ContainerInfo, running: int = 0, workspaces: int = 0) -> Project:
    return Project(
        id=row.id,
        name=row.name,
        source_url=row.source_url,
        image=row.image,
        agent_command=tuple(row.agent_command),
        agent_protocol=row.agent_protocol,
        agent=row.agent,
        network=row.network,
        egress_allow=tuple(row.egress_allow or ()),
        git=row.git,
        created_at=row.created_at,
        container=container,
        sessions_running=running,
        workspaces=workspaces,
    )


def to_workspace(row: WorkspaceRow, session_id: str = "") -> Workspace:
    return Workspace(
        id=row.id,
        project_id=row.project_id,
        kind=row.kind,
        branch=row.branch,
        path=ProjectLayout.container_workspace(row.id),
        created_at=row.created_at,
        session_id=session_id,
    )


def to_session(row: SessionRow, events: int) -> Session:
    return Session(
        id=row.id,
        project_id=row.project_id,
        workspace_id=row.workspace_id,
        state=row.state,
        agent_command=tuple(row.agent_command),
        agent_protocol=row.agent_protocol,
        agent=row.agent,
        exit_code=row.exit_code,
        events=events,
        detail=row.detail,
        created_at=row.created_at,
        ended_at=row.ended_at,
        idempotency_key=row.idempotency_key or "",
    )
