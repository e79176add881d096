"""One hardened container per project: start, stop, logs, exec, and reconciliation by label."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from sqlalchemy import select

from jarvis.common.errors import FailedPrecondition, InvalidArgument, JarvisError, NotFound
from jarvis.runtime.domain.deps import LABEL_PROJECT, LABEL_SERVER, Deps
from jarvis.runtime.domain.egress import Egress
from jarvis.runtime.domain.layout import CONTAINER_TMP
from jarvis.runtime.domain.models import ABSENT, ContainerInfo, ExecResult
from jarvis.runtime.domain.ports import ContainerSpec
from jarvis.runtime.domain.rows import project_row, workspace_row
from jarvis.runtime.domain.validate import check_argv, clamp
from jarvis.runtime.storage.models import ProjectRow

log = logging.getLogger(__name__)

# PID 1 (docker's init) runs this: it only keeps the container alive for execs, and dies on SIGTERM.
KEEPALIVE = ("sleep", "2147483647")


class Containers:
    def __init__(self, deps: Deps, egress: Egress, on_stop: Callable[[str, str], None]) -> None:
        self._d = deps
        self._egress = egress
        self._on_stop = on_stop  # (project_id, reason): sessions in the container end with it

    def spec(self, row: ProjectRow) -> ContainerSpec:
        s = self._d.settings
        layout = self._d.layout(row.id)
        return ContainerSpec(
            name=self._d.container_name(row.id),
            image=row.image,
            labels=self._d.labels(row.id),
            mounts=[*layout.mounts(row.git), *self._egress.mounts(row)],
            user=s.container_user,
            network=s.network if row.network else "none",
            memory=s.memory,
            cpus=s.cpus,
            pids=s.pids,
            tmpfs_size=s.tmpfs_size,
            workdir=layout.container_repo(),
            env={"HOME": CONTAINER_TMP, "JARVIS_PROJECT_ID": row.id, **self._egress.env(row)},
        )

    def info(self, container_id: str) -> ContainerInfo:
        if not container_id:
            return ABSENT
        return self._d.engine.inspect(container_id) or ABSENT

    def start(self, project_id: str) -> ContainerInfo:
        """Create the container if needed and start it, with its egress; idempotent."""
        with self._d.locks.hold(project_id):
            with self._d.db.read() as session:
                row = project_row(session, project_id)
            current = self.info(row.container_id)
            if current.state == "running":
                self._egress.ensure(project_id, current.id)
                return current
            if row.capped:
                with self._d.locks.hold(f"token:{row.created_by}"):  # two starts cannot both take the last place
                    return self._start(row, current)
            return self._start(row, current)

    def _start(self, row: ProjectRow, current: ContainerInfo) -> ContainerInfo:
        project_id = row.id
        if row.capped:
            self._check_running_cap(row)
        container_id = current.id
        if container_id and current.image != row.image:
            # The project's image changed (image_rebuild): a stopped container is recreated from it.
            self._d.engine.remove(container_id)
            container_id = ""
        if not container_id:
            container_id = self._d.engine.create(self.spec(row), KEEPALIVE)
            with self._d.db.write() as session:
                project_row(session, project_id).container_id = container_id
        self._d.engine.start(container_id)
        self._egress.ensure(project_id, container_id)
        return self.info(container_id)

    def _check_running_cap(self, row: ProjectRow) -> None:
        """Refuse to start one more container of the token that owns `row` once its cap of running ones is reached."""
        cap = self._d.settings.max_running_containers_per_token
        if not cap:
            return
        with self._d.db.read() as session:
            others = session.scalars(
                select(ProjectRow.container_id).where(
                    ProjectRow.created_by == row.created_by,
                    ProjectRow.capped,
                    ProjectRow.id != row.id,
                    ProjectRow.container_id != "",
                )
            ).all()
        running = sum(1 for container_id in others if self.info(container_id).state == "running")
        if running >= cap:
            raise FailedPrecondition(
                f"the token that owns project {row.id} already has {running} containers running, the most a token "
                f"may (the runtime's max_running_containers_per_token={cap}); stop one of them (container "
                "action=stop), or have an admin raise the cap (JARVIS_RUNTIME_MAX_RUNNING_CONTAINERS_PER_TOKEN, "
                "0 for none)"
            )

    def stop(self, project_id: str) -> ContainerInfo:
        with self._d.locks.hold(project_id):
            with self._d.db.read() as session:
                row = project_row(session, project_id)
            current = self.info(row.container_id)
            if current.state == "running":
                self._on_stop(project_id, "the container was stopped")
                self._d.engine.stop(current.id, self._d.settings.session_end_grace_seconds)
            self._egress.forget(project_id, current.id)
            return self.info(current.id)

    def running(self, project_id: str) -> tuple[ProjectRow, ContainerInfo]:
        """The project and its running container, or FailedPrecondition saying how to start it."""
        with self._d.db.read() as session:
            row = project_row(session, project_id)
        current = self.info(row.container_id)
        if current.state != "running":
            raise FailedPrecondition(
                f"the container of project {project_id} is not running ({current.state}); "
                "start it with container action=start"
            )
        return row, current

    def logs(self, project_id: str, tail: int, since: int) -> tuple[str, bool]:
        with self._d.db.read() as session:
            row = project_row(session, project_id)
        if not row.container_id or self.info(row.container_id) is ABSENT:
            raise FailedPrecondition(f"project {project_id} has no container yet; start it with container action=start")
        tail = clamp(tail, self._d.settings.logs_tail_default, 10_000, "tail")
        text = self._d.engine.logs(row.container_id, tail, since)
        limit = self._d.settings.exec_output_max_bytes
        return text[-limit:], len(text) > limit

    def exec(
        self, project_id: str, argv: Sequence[str], command: str, workspace_id: str, timeout: int, max_output: int
    ) -> ExecResult:
        s = self._d.settings
        if bool(argv) == bool(command):
            raise InvalidArgument(
                "container action=exec needs exactly one of argv (a list) or command (a string "
                "run by sh -c inside the container)"
            )
        args = check_argv(argv, "argv") if argv else ["sh", "-c", command]
        timeout = clamp(timeout, s.exec_timeout_seconds, s.exec_timeout_max_seconds, "timeout")
        max_output = clamp(max_output, s.exec_output_max_bytes, s.exec_output_max_bytes, "max_output")
        row, current = self.running(project_id)
        workdir = self._d.layout(row.id).container_repo()
        if workspace_id:
            with self._d.db.read() as session:
                workdir = self._d.layout(row.id).container_workspace(workspace_row(session, row.id, workspace_id).id)
        return self._d.engine.exec(
            current.id, args, workdir=workdir, user=s.container_user, timeout=timeout, max_output=max_output
        )

    def remove(self, row: ProjectRow) -> bool:
        containers = self._d.engine.list_managed(self._d.labels(row.id))
        for container in containers:
            self._d.engine.remove(container.id)
            self._egress.forget(row.id, container.id)
        return bool(containers)

    def reconcile(self) -> dict[str, list[str]]:
        """Re-adopt this instance's containers whose project exists; remove the others (orphans).

        MCP server containers are not projects' (see servers.Servers.reap).
        """
        found = [c for c in self._d.engine.list_managed(self._d.labels()) if LABEL_SERVER not in c.labels]
        with self._d.db.read() as session:
            projects = {r.id: r.container_id for r in session.scalars(select(ProjectRow))}
        removed, adopted, kept = [], [], set()
        for container in found:
            project_id = container.labels.get(LABEL_PROJECT, "")
            if project_id not in projects or project_id in kept:
                self._d.engine.remove(container.id)
                removed.append(container.name or container.id[:12])
                continue
            kept.add(project_id)
            if projects[project_id] != container.id:
                self._set_container(project_id, container.id)
            adopted.append(container.name)
            if container.state == "running":
                self._resume_egress(project_id, container.id)
        for project_id, container_id in projects.items():
            if container_id and project_id not in kept:
                self._set_container(project_id, "")
        if removed:
            log.warning("removed orphan containers", extra={"containers": removed})
        return {"removed": removed, "adopted": adopted}

    def _resume_egress(self, project_id: str, container_id: str) -> None:
        """Serve an adopted container's egress again (its bridge survived; the proxy went with the last runtime)."""
        try:
            self._egress.ensure(project_id, container_id)
        except JarvisError as exc:
            log.warning("egress not resumed", extra={"project": project_id, "reason": exc.message})

    def kill_stray_execs(self) -> int:
        """Kill the execs and agents a previous runtime left running in the project containers it adopted.

        Their callers, timeouts and output readers died with that process; left alone they would run on.
        """
        with self._d.db.read() as session:
            containers = [r.container_id for r in session.scalars(select(ProjectRow)) if r.container_id]
        killed = 0
        for container_id in containers:
            if self.info(container_id).state == "running":
                killed += self._d.engine.kill_marked(container_id, self._d.settings.container_user)
        return killed

    def _set_container(self, project_id: str, container_id: str) -> None:
        try:
            with self._d.db.write() as session:
                project_row(session, project_id).container_id = container_id
        except NotFound:
            pass  # deleted meanwhile
