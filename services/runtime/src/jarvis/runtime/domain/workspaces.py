"""Workspaces: a git worktree on its own branch (git projects) or a plain directory, one per session."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession

from jarvis.common.errors import FailedPrecondition
from jarvis.common.sql.types import utcnow
from jarvis.runtime.domain.deps import Deps
from jarvis.runtime.domain.layout import remove_tree
from jarvis.runtime.domain.models import RUNNING, Changes, Workspace
from jarvis.runtime.domain.records import to_workspace
from jarvis.runtime.domain.rows import project_row, session_row, workspace_row
from jarvis.runtime.domain.validate import clamp, new_id
from jarvis.runtime.storage.models import SessionRow, WorkspaceRow

BRANCH_PREFIX = "jarvis/"


class Workspaces:
    def __init__(self, deps: Deps) -> None:
        self._d = deps

    def create(self, project_id: str) -> Workspace:
        """A new workspace; nothing is left behind when any step fails."""
        workspace_id = new_id("workspace")
        with self._d.db.read() as session:
            git = project_row(session, project_id).git
        layout = self._d.layout(project_id)
        path = layout.workspaces / workspace_id
        branch = BRANCH_PREFIX + workspace_id if git else ""
        try:
            if git:
                self._d.git.add_worktree(layout.repo, path, branch)
                layout.hand_over(layout.repo / ".git" / "worktrees" / workspace_id)
            else:
                path.mkdir()
            layout.hand_over(path)
            with self._d.db.write() as session:
                row = WorkspaceRow(
                    id=workspace_id,
                    project_id=project_id,
                    kind="worktree" if git else "directory",
                    branch=branch,
                    created_at=utcnow(),
                )
                session.add(row)
        except BaseException:
            self._discard(project_id, workspace_id, git)
            raise
        return to_workspace(row)

    def list(self, project_id: str) -> list[Workspace]:
        with self._d.db.read() as session:
            project_row(session, project_id)
            rows = session.scalars(
                select(WorkspaceRow)
                .where(WorkspaceRow.project_id == project_id)
                .order_by(WorkspaceRow.created_at, WorkspaceRow.id)
            ).all()
            users = self._users(project_id, session)
        return [to_workspace(r, users.get(r.id, "")) for r in rows]

    @staticmethod
    def _users(project_id: str, session: DbSession) -> dict[str, str]:
        """Workspace id -> the running session using it."""
        running = session.scalars(
            select(SessionRow).where(SessionRow.project_id == project_id, SessionRow.state == RUNNING)
        )
        return {s.workspace_id: s.id for s in running}

    def check_free(self, project_id: str, workspace_id: str) -> Workspace:
        """The workspace, or FailedPrecondition when a running session uses it."""
        with self._d.db.read() as session:
            row = workspace_row(session, project_id, workspace_id)
            user = self._users(project_id, session).get(row.id, "")
        if user:
            raise FailedPrecondition(
                f"workspace {workspace_id} is in use by running session {user}; end it with session action=end first"
            )
        return to_workspace(row)

    def delete(self, project_id: str, workspace_id: str) -> str:
        with self._d.locks.hold(project_id):
            self.check_free(project_id, workspace_id)
            with self._d.db.read() as session:
                git = project_row(session, project_id).git
            self._discard(project_id, workspace_id, git)
            with self._d.db.write() as session:
                session.delete(workspace_row(session, project_id, workspace_id))
        return workspace_id

    def _discard(self, project_id: str, workspace_id: str, git: bool) -> None:
        layout = self._d.layout(project_id)
        if git:
            self._d.git.remove_worktree(layout.repo, layout.workspaces / workspace_id, workspace_id)
        remove_tree(layout.workspaces / workspace_id)

    def changes(self, project_id: str, workspace_id: str, session_id: str, max_bytes: int) -> Changes:
        """git status and diff of a workspace (or of the session's workspace)."""
        with self._d.db.read() as session:
            row = project_row(session, project_id)
            if not workspace_id:
                if not session_id:
                    raise FailedPrecondition("project_changes needs workspace_id or session_id")
                workspace_id = session_row(session, project_id, session_id).workspace_id
            workspace = workspace_row(session, project_id, workspace_id)
        if not row.git:
            raise FailedPrecondition(
                f"project {project_id} has no git repository (it was created without "
                "source_url), so its workspaces have no changes to show"
            )
        layout = self._d.layout(project_id)
        max_bytes = clamp(max_bytes, self._d.settings.exec_output_max_bytes, 4 * 1024 * 1024, "max_bytes")
        return self._d.git.changes(layout.repo, layout.workspace(workspace.id), workspace.id, max_bytes)
