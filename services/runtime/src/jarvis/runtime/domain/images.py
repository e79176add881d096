"""Image rebuilds from the project's Dockerfile; every output line is an event of the build id."""

from __future__ import annotations

from jarvis.common.errors import FailedPrecondition, JarvisError, NotFound
from jarvis.common.sql.types import utcnow
from jarvis.runtime.domain.deps import Deps
from jarvis.runtime.domain.models import BuildResult
from jarvis.runtime.domain.rows import project_row
from jarvis.runtime.domain.validate import check_id, new_id
from jarvis.runtime.storage.models import BuildRow

DOCKERFILE = "Dockerfile"
TAIL_LINES = 20


def build_state(deps: Deps, project_id: str, build_id: str) -> str:
    with deps.db.read() as session:
        row = session.get(BuildRow, check_id("build", build_id))
        if row is None or row.project_id != project_id:
            raise NotFound(f"build '{build_id}' not found in project {project_id}")
        return row.state


def rebuild(deps: Deps, project_id: str) -> BuildResult:
    """Build `jarvis-project-<id>:latest` from the checkout's Dockerfile; the project uses it from then on.

    A stopped container is recreated from the new image at its next start; a running one keeps
    its image until it is stopped and started again.
    """
    with deps.db.read() as session:
        row = project_row(session, project_id)
    layout = deps.layout(row.id)
    dockerfile = layout.repo / DOCKERFILE
    if not dockerfile.is_file() or dockerfile.is_symlink():
        raise FailedPrecondition(
            f"project {project_id} has no {DOCKERFILE} at the root of its checkout; add one "
            "to the source repository and create the project again"
        )
    build_id, tag = new_id("build"), f"jarvis-project-{row.id}:latest"
    with deps.db.write() as session:
        session.add(BuildRow(id=build_id, project_id=row.id, image=tag, state="running", error="", created_at=utcnow()))
    tail: list[str] = []

    def on_line(line: str) -> None:
        tail.append(line)
        del tail[:-TAIL_LINES]
        deps.events.append(row.id, build_id, [("build", {"line": line})])

    error = ""
    try:
        deps.engine.build(layout.repo, DOCKERFILE, tag, deps.settings.build_timeout_seconds, on_line)
    except JarvisError as exc:
        error = exc.message
    with deps.db.write() as session:
        build = session.get(BuildRow, build_id)
        assert build is not None
        build.state = "failed" if error else "succeeded"
        build.error = error
        if not error:
            project_row(session, row.id).image = tag
    deps.events.append(row.id, build_id, [("build_end", {"ok": not error, "error": error, "image": tag})])
    return BuildResult(build_id=build_id, image=tag, ok=not error, error=error, log_tail=tail)
