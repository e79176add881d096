"""What every use case shares: storage, the engine, git, the event log, settings and per-key locks."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from sqlalchemy.orm import Session as DbSession

from jarvis.common.errors import NotFound
from jarvis.common.sql.database import Database
from jarvis.runtime.domain.events import EventLog
from jarvis.runtime.domain.layout import ProjectLayout
from jarvis.runtime.domain.models import ContainerInfo, Project, Session, Workspace
from jarvis.runtime.domain.ports import Engine, Git
from jarvis.runtime.domain.validate import check_id
from jarvis.runtime.settings import RuntimeSettings
from jarvis.runtime.storage.models import ProjectRow, SessionRow, WorkspaceRow

LABEL_MANAGED = "jarvis.runtime"
LABEL_INSTANCE = "jarvis.runtime.instance"
LABEL_PROJECT = "jarvis.project"
LABEL_SERVER = "jarvis.server"  # an MCP server container (AttachServer); its value is the server's name


class KeyedLocks:
    """One re-entrant lock per key (a project): lifecycle changes of one project never interleave."""

    def __init__(self) -> None:
        self._locks: dict[str, threading.RLock] = {}
        self._guard = threading.Lock()

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        with self._guard:
            lock = self._locks.setdefault(key, threading.RLock())
        with lock:
            yield


@dataclass
class Deps:
    db: Database
    engine: Engine
    git: Git
    events: EventLog
    settings: RuntimeSettings
    locks: KeyedLocks = field(default_factory=KeyedLocks)

    def layout(self, project_id: str) -> ProjectLayout:
        return ProjectLayout(self.settings.projects_dir, project_id, self.settings.container_user)

    def labels(self, project_id: str = "") -> dict[str, str]:
        labels = {LABEL_MANAGED: "1", LABEL_INSTANCE: self.settings.instance}
        if project_id:
            labels[LABEL_PROJECT] = project_id
        return labels

    def container_name(self, project_id: str) -> str:
        return f"jarvis-{self.settings.instance}-{project_id}"


def project_row(session: DbSession, project_id: str) -> ProjectRow:
    row = session.get(ProjectRow, check_id("project", project_id))
    if row is None:
        raise NotFound(f"project '{project_id}' not found; list projects with project action=list")
    return row


def workspace_row(session: DbSession, project_id: str, workspace_id: str) -> WorkspaceRow:
    project_row(session, project_id)  # an unknown project is named as such, not as a missing workspace
    row = session.get(WorkspaceRow, check_id("workspace", workspace_id))
    if row is None or row.project_id != project_id:
        raise NotFound(
            f"workspace '{workspace_id}' not found in project {project_id}; list them with workspace action=list"
        )
    return row


def session_row(session: DbSession, project_id: str, session_id: str) -> SessionRow:
    project_row(session, project_id)
    row = session.get(SessionRow, check_id("session", session_id))
    if row is None or row.project_id != project_id:
        raise NotFound(f"session '{session_id}' not found in project {project_id}; list them with session action=list")
    return row


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
