"""Finding a project's rows by id: a missing one is a NotFound that says how to list what exists."""

from __future__ import annotations

from sqlalchemy.orm import Session as DbSession

from jarvis.common.errors import NotFound
from jarvis.runtime.domain.validate import check_id
from jarvis.runtime.storage.models import BuildRow, ProjectRow, SessionRow, WorkspaceRow


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


def project_of_stream(session: DbSession, stream_id: str) -> str:
    """The project a session (or a build, `b…`) belongs to: its id alone names it, so a caller need not repeat the
    project (session action=events with only session_id)."""
    row: BuildRow | SessionRow | None
    if stream_id.startswith("b"):
        row = session.get(BuildRow, check_id("build", stream_id))
    else:
        row = session.get(SessionRow, check_id("session", stream_id))
    if row is None:
        raise NotFound(f"'{stream_id}' not found; list sessions with session action=list project_id=<project>")
    return row.project_id
