"""Projects: created all-or-nothing (clone, layout, row), listed, inspected, deleted with all they own."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from jarvis.common.errors import AlreadyExists, FailedPrecondition, JarvisError
from jarvis.common.sql.types import utcnow
from jarvis.runtime.domain import agents
from jarvis.runtime.domain.agent_image import missing_image_hint
from jarvis.runtime.domain.containers import Containers
from jarvis.runtime.domain.deps import Deps
from jarvis.runtime.domain.egress_policy import check_entries
from jarvis.runtime.domain.layout import remove_tree
from jarvis.runtime.domain.models import ABSENT, RUNNING, ContainerInfo, DeleteResult, Project
from jarvis.runtime.domain.records import to_project
from jarvis.runtime.domain.rows import project_row
from jarvis.runtime.domain.sessions import Sessions
from jarvis.runtime.domain.validate import check_image, check_name, check_source, new_id
from jarvis.runtime.storage.models import BuildRow, ProjectRow, SessionRow, WorkspaceRow

STAGING_PREFIX = ".staging-"


class Projects:
    def __init__(self, deps: Deps, containers: Containers, sessions: Sessions) -> None:
        self._d = deps
        self._containers = containers
        self._sessions = sessions

    def create(
        self,
        name: str,
        source_url: str,
        image: str,
        agent_command: Sequence[str],
        agent_protocol: str,
        network: bool,
        egress_allow: Sequence[str] = (),
        agent: str = "",
        created_by: str = "",
        uncapped: bool = False,
    ) -> Project:
        """A project owned by the token `created_by` ("": the local user); unless `uncapped` (an admin's), it counts
        against that token's cap on projects, and its containers against its cap on running containers."""
        s = self._d.settings
        name, source, image = check_name(name), check_source(source_url, s.project_roots), check_image(image) or s.image
        choice = agents.choose(agent, agent_command, agent_protocol, s)
        egress = check_entries(egress_allow)
        capped = bool(created_by) and not uncapped
        if capped:
            self._check_project_cap(created_by)  # before cloning anything; again where the row is written
        self._check_name_free(name)
        if not self._d.engine.image_exists(image):
            raise FailedPrecondition(
                f"image '{image}' does not exist on the Docker engine at {self._d.engine.host}; "
                f"{missing_image_hint(image)}; or pass an image that exists "
                "(project_options shows the default)"
            )
        project_id = new_id("project")
        staging = s.projects_dir / f"{STAGING_PREFIX}{project_id}"
        final = self._d.layout(project_id)
        try:
            s.projects_dir.mkdir(parents=True, exist_ok=True)
            staging.mkdir()
            if source:
                self._d.git.clone(source, staging / "repo", s.clone_timeout_seconds)
            final.prepare(staging, git=bool(source))
            staging.rename(final.root)
            with self._d.db.write() as session:
                if capped:
                    self._check_project_cap(created_by, session)
                row = ProjectRow(
                    id=project_id,
                    name=name,
                    source_url=source,
                    image=image,
                    agent_command=choice.command,
                    agent_protocol=choice.protocol,
                    agent=choice.agent,
                    network=network,
                    egress_allow=egress,
                    git=bool(source),
                    container_id="",
                    created_at=utcnow(),
                    created_by=created_by,
                    capped=capped,
                )
                session.add(row)
        except BaseException:
            remove_tree(staging)
            remove_tree(final.root)
            raise
        return to_project(row, ABSENT)

    def _check_project_cap(self, token_id: str, session: Session | None = None) -> None:
        cap = self._d.settings.max_projects_per_token
        if not cap:
            return
        query = select(func.count()).select_from(ProjectRow).where(ProjectRow.created_by == token_id, ProjectRow.capped)
        if session is None:
            with self._d.db.read() as reading:
                owned = reading.scalar(query) or 0
        else:
            owned = session.scalar(query) or 0
        if owned >= cap:
            raise FailedPrecondition(
                f"this token already owns {owned} projects, the most a token may (the runtime's "
                f"max_projects_per_token={cap}); delete one of them, or have an admin create the project or raise "
                "the cap (JARVIS_RUNTIME_MAX_PROJECTS_PER_TOKEN, 0 for none)"
            )

    def _check_name_free(self, name: str) -> None:
        with self._d.db.read() as session:
            existing = session.scalar(select(ProjectRow.id).where(ProjectRow.name == name))
        if existing:
            raise AlreadyExists(
                f"a project named '{name}' already exists ({existing}); pick another name or delete it first"
            )

    def _counts(self, project_ids: Sequence[str]) -> tuple[dict[str, int], dict[str, int]]:
        with self._d.db.read() as session:
            running = dict(
                session.execute(
                    select(SessionRow.project_id, func.count())
                    .where(SessionRow.project_id.in_(project_ids), SessionRow.state == RUNNING)
                    .group_by(SessionRow.project_id)
                ).all()
            )
            spaces = dict(
                session.execute(
                    select(WorkspaceRow.project_id, func.count())
                    .where(WorkspaceRow.project_id.in_(project_ids))
                    .group_by(WorkspaceRow.project_id)
                ).all()
            )
        return running, spaces

    def _container(self, container_id: str) -> ContainerInfo:
        # Listing must work while Docker is down: the container's state is then reported as unknown.
        try:
            return self._containers.info(container_id)
        except JarvisError as exc:
            return ContainerInfo(id=container_id, name="", image="", state=f"unknown: {exc.message}")

    def all(self) -> list[Project]:
        with self._d.db.read() as session:
            rows = session.scalars(select(ProjectRow).order_by(ProjectRow.created_at, ProjectRow.id)).all()
        running, spaces = self._counts([r.id for r in rows])
        return [to_project(r, self._container(r.container_id), running.get(r.id, 0), spaces.get(r.id, 0)) for r in rows]

    def get(self, project_id: str) -> Project:
        with self._d.db.read() as session:
            row = project_row(session, project_id)
        running, spaces = self._counts([row.id])
        return to_project(row, self._container(row.container_id), running.get(row.id, 0), spaces.get(row.id, 0))

    def delete(self, project_id: str) -> DeleteResult:
        """End its sessions, remove its container, workspaces, checkout, events and rows."""
        with self._d.db.read() as session:
            row = project_row(session, project_id)
        self._d.engine.ping()  # refuse before changing anything when the engine is down
        with self._d.locks.hold(project_id):
            ended = self._sessions.end_project(project_id, "the project was deleted", force=True)
            removed = self._containers.remove(row)
            with self._d.db.read() as session:
                workspaces = session.scalar(select(func.count()).where(WorkspaceRow.project_id == project_id)) or 0
                streams = [
                    *session.scalars(select(SessionRow.id).where(SessionRow.project_id == project_id)),
                    *session.scalars(select(BuildRow.id).where(BuildRow.project_id == project_id)),
                ]
            with self._d.db.write() as session:
                session.delete(project_row(session, project_id))
            self._d.events.drop(streams)
            self._d.layout(project_id).remove()
        return DeleteResult(project_id, ended, int(workspaces), removed)

    def sweep_staging(self) -> list[str]:
        """Remove what a crash left on disk: staging dirs and directories of projects that do not exist."""
        root = self._d.settings.projects_dir
        if not root.is_dir():
            return []
        with self._d.db.read() as session:
            known = set(session.scalars(select(ProjectRow.id)))
        swept = []
        for entry in root.iterdir():
            if entry.name.startswith(STAGING_PREFIX) or (entry.name not in known and entry.name.startswith("p")):
                with contextlib.suppress(OSError):
                    remove_tree(entry)
                    swept.append(entry.name)
        return swept
