"""Agent sessions: spawn (see spawn.py), message, read events from a cursor, end, clean up."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Mapping
from datetime import timedelta

from sqlalchemy import ColumnElement, or_, select, update

from jarvis.common.errors import FailedPrecondition, InvalidArgument
from jarvis.common.sql.types import utcnow
from jarvis.runtime.domain.agent_protocol import (
    REQUEST_TYPES,
    RESPONSE_EVENT,
    encode_message,
    encode_tool_response,
    request_id_of,
)
from jarvis.runtime.domain.containers import Containers
from jarvis.runtime.domain.deps import Deps
from jarvis.runtime.domain.images import build_state
from jarvis.runtime.domain.live import LiveSession, LiveSessions
from jarvis.runtime.domain.models import ENDED, FINISHED_STATES, LOST, RUNNING, EventPage, Session
from jarvis.runtime.domain.records import to_session
from jarvis.runtime.domain.rows import project_of_stream, project_row, session_row
from jarvis.runtime.domain.secrets import Secrets
from jarvis.runtime.domain.spawn import Spawner, check_idempotency_key
from jarvis.runtime.domain.validate import check_id, clamp
from jarvis.runtime.domain.workspaces import Workspaces
from jarvis.runtime.storage.models import ProjectRow, SessionRow

log = logging.getLogger(__name__)
MAX_MESSAGE_BYTES = 1024 * 1024


class Sessions:
    def __init__(
        self, deps: Deps, live: LiveSessions, containers: Containers, workspaces: Workspaces, secrets: Secrets
    ) -> None:
        self._d = deps
        self._live = live
        self._spawner = Spawner(deps, live, containers, workspaces, secrets, expire=self._expire)
        # A long-poll holds a server thread while it waits; only this many may, so the rest of the pool stays free.
        self.waits_max = max(1, min(deps.settings.max_waiting_polls, deps.settings.max_workers // 2))
        self._waits = threading.BoundedSemaphore(self.waits_max)

    def _session(self, row: SessionRow) -> Session:
        # Never called with a database session open: the event log takes its lock and then a
        # connection, so holding a connection while waiting for that lock could starve the pool.
        return to_session(row, self._d.events.last(row.id))

    def _load(self, project_id: str, session_id: str) -> SessionRow:
        with self._d.db.read() as session:
            return session_row(session, project_id, session_id)

    def spawn(
        self,
        project_id: str,
        workspace_id: str,
        prompt: str,
        idempotency_key: str = "",
        agent: str = "",
        secret_overrides: Mapping[str, str] | None = None,
        *,
        session_id: str = "",
        agent_env: Mapping[str, str] | None = None,
    ) -> Session:
        """Start the project's agent (or the preset `agent`) in a workspace (a new one unless given).

        The container starts if needed. The agent gets the project's secrets as environment variables,
        with `secret_overrides` (variable -> another secret's name) applied, and Jarvis's `agent_env` (JARVIS_*
        only: the credential it acts with for the person who spawned it, decision 0057), masked in its output; the
        session's id is `session_id` when given (the one that credential names). The spawn waits briefly for the
        agent's first output: one that exits with an error first (a missing binary, a crash) fails the spawn
        with its reason instead of reporting a running session.

        With an idempotency key, a session of the project already spawned with it is returned as it is
        (its prompt is not sent again): a redelivered request never starts a second agent.
        """
        key = check_idempotency_key(idempotency_key)
        # Before starting anything: a redelivery must not even restart a container stopped meanwhile.
        earlier = self._spawner.spawned_with(project_id, key)
        if earlier is not None:
            return self._session(earlier)
        started = self._spawner.start(
            project_id, workspace_id, key, prompt, agent, secret_overrides or {}, session_id, agent_env or {}
        )
        if started.live is None:
            return self._session(started.row)
        if started.live.stdin and prompt:
            with contextlib.suppress(FailedPrecondition):  # it died before reading: reported below
                self.message(project_id, "", started.row.id, prompt)
        self._spawner.check_started(project_id, started)
        return self._session(self._load(project_id, started.row.id))

    def _expire(self, project_id: str, session_id: str, reason: str) -> None:
        try:
            self.end(project_id, session_id, force=True, reason=reason)
        except Exception:  # deleted meanwhile, or the engine is gone: nothing left to end
            log.warning("could not end an expired session", extra={"session": session_id}, exc_info=True)

    def _running(self, project_id: str, workspace_id: str, session_id: str) -> tuple[SessionRow, LiveSession]:
        with self._d.db.read() as session:
            if session_id:
                row = session_row(session, project_id, session_id)
            elif workspace_id:
                check_id("workspace", workspace_id)
                found = session.scalars(
                    select(SessionRow).where(
                        SessionRow.project_id == project_id,
                        SessionRow.workspace_id == workspace_id,
                        SessionRow.state == RUNNING,
                    )
                ).first()
                if found is None:
                    raise FailedPrecondition(
                        f"no running session in workspace {workspace_id}; spawn one with "
                        f"session action=spawn workspace_id={workspace_id}"
                    )
                row = found
            else:
                raise InvalidArgument("session action=message needs workspace_id or session_id")
        live = self._live.get(row.id)
        if row.state != RUNNING or live is None:
            raise FailedPrecondition(
                f"session {row.id} is not running ({row.state}); spawn a new one with "
                f"session action=spawn workspace_id={row.workspace_id}"
            )
        return row, live

    def message(self, project_id: str, workspace_id: str, session_id: str, text: str) -> Session:
        if not text or len(text.encode()) > MAX_MESSAGE_BYTES:
            raise InvalidArgument(f"message must be 1 to {MAX_MESSAGE_BYTES} bytes")
        row, live = self._running(project_id, workspace_id, session_id)
        if not live.stdin:
            raise FailedPrecondition(
                f"session {row.id} runs agent {row.agent}, which takes one prompt when it starts; "
                f"send this one with session action=spawn workspace_id={row.workspace_id} "
                "once it has finished"
            )
        self._d.events.append(project_id, row.id, [("input", {"text": text})])
        self._write(row, live, encode_message(row.agent_protocol, text))
        return self._session(row)

    def _write(self, row: SessionRow, live: LiveSession, data: bytes) -> None:
        try:
            live.process.write(data)
        except OSError as exc:
            raise FailedPrecondition(f"session {row.id} no longer reads its input ({exc}); it is ending") from exc

    def respond(self, project_id: str, session_id: str, request_id: str, result_json: str, is_error: bool) -> None:
        """Answer a tool request the agent emitted as an event, on its stdin, once."""
        if not request_id or len(request_id) > 200:
            raise InvalidArgument("request_id is required (the request_id of the agent's tool_request event)")
        row, live = self._running(project_id, "", session_id)
        requests = [
            e
            for e in self._d.events.find(row.id, REQUEST_TYPES, request_id)
            if request_id_of(e.payload_json) == request_id
        ]
        if not requests:
            raise FailedPrecondition(
                f"session {session_id} has no tool request '{request_id}'; read its events with session action=events"
            )
        answered = [
            e
            for e in self._d.events.find(row.id, (RESPONSE_EVENT,), request_id)
            if request_id_of(e.payload_json) == request_id
        ]
        if answered:
            raise FailedPrecondition(f"tool request '{request_id}' of session {session_id} was already answered")
        data = encode_tool_response(requests[0].type, request_id, result_json, is_error)
        self._d.events.append(project_id, row.id, [(RESPONSE_EVENT, {"request_id": request_id, "is_error": is_error})])
        self._write(row, live, data)

    def get(self, project_id: str, session_id: str) -> Session:
        return self._session(self._load(project_id, session_id))

    def of_project(self, project_id: str) -> list[Session]:
        with self._d.db.read() as session:
            project_row(session, project_id)
            rows = session.scalars(
                select(SessionRow)
                .where(SessionRow.project_id == project_id)
                .order_by(SessionRow.created_at, SessionRow.id)
            ).all()
        return [self._session(r) for r in rows]

    def events(self, project_id: str, stream_id: str, after: int, limit: int, wait: float) -> EventPage:
        """Events of a session (or of a build, by its id) after the cursor `after`.

        Waits up to `wait` s for one while the stream runs, unless `waits_max` long-polls already wait: then it
        answers at once, so long-polls cannot take the server threads every other call needs (issue 34 #8).
        An empty `project_id` is the stream's own project."""
        if not project_id:
            with self._d.db.read() as session:
                project_id = project_of_stream(session, stream_id)
        state = self._stream_state(project_id, stream_id)
        limit = clamp(limit, 100, self._d.settings.events_page_max, "limit")
        wait = wait if state == RUNNING else 0.0
        waiting = wait > 0 and self._waits.acquire(blocking=False)
        if wait > 0 and not waiting:
            # Every waiting slot is taken: answer at once with what there is; the caller polls again.
            log.info("%d event long-polls already waiting: %s answered without waiting", self.waits_max, stream_id)
        try:
            events, cursor = self._d.events.page(stream_id, max(after, 0), limit, wait if waiting else 0.0)
        finally:
            if waiting:
                self._waits.release()
        return EventPage(events, cursor, self._stream_state(project_id, stream_id) if not events else state)

    def _stream_state(self, project_id: str, stream_id: str) -> str:
        if stream_id.startswith("b"):
            return build_state(self._d, project_id, stream_id)
        with self._d.db.read() as session:
            return session_row(session, project_id, stream_id).state

    def end(self, project_id: str, session_id: str, force: bool = False, reason: str = "") -> Session:
        """Close the agent's input and wait the grace period; then kill its process group."""
        row = self._load(project_id, session_id)
        live = self._live.get(row.id)
        detail = reason or "ended on request"
        if live is not None:
            grace = 0 if force else self._d.settings.session_end_grace_seconds
            live.ending = detail + " (input closed, the agent exited)"
            live.process.close_stdin()
            if not live.done.wait(grace):
                detail += f" (killed{' at once' if force else f' after {grace} s'})"
                live.ending = detail
                self._d.engine.kill_group(live.container_id, live.process.pid, self._d.settings.container_user)
                live.done.wait(5)
        if row.state == RUNNING:
            self._mark(row.id, ENDED, detail)
        return self._session(self._load(project_id, session_id))

    def _mark(self, session_id: str, state: str, detail: str) -> None:
        with self._d.db.write() as session:
            session.execute(
                update(SessionRow)
                .where(SessionRow.id == session_id, SessionRow.state == RUNNING)
                .values(state=state, detail=detail, ended_at=utcnow())
            )
        self._d.events.append(*self._owner(session_id), [("session_end", {"state": state, "detail": detail})])

    def _owner(self, session_id: str) -> tuple[str, str]:
        with self._d.db.read() as session:
            row = session.get(SessionRow, session_id)
            return (row.project_id if row else ""), session_id

    def end_project(self, project_id: str, reason: str, force: bool = False) -> int:
        """End every running session of a project (its container stops or the project goes)."""
        with self._d.db.read() as session:
            running = session.scalars(
                select(SessionRow.id).where(SessionRow.project_id == project_id, SessionRow.state == RUNNING)
            ).all()
        for session_id in running:
            self.end(project_id, session_id, force=force, reason=reason)
        return len(running)

    def cleanup(self, project_id: str, older_than_seconds: int) -> tuple[list[str], list[str]]:
        """Remove finished sessions and, with an age, also end and remove sessions older than it."""
        if older_than_seconds < 0:
            raise InvalidArgument("older_than_seconds must be positive (0: finished sessions only)")
        cutoff = utcnow() - timedelta(seconds=older_than_seconds)
        with self._d.db.read() as session:
            project_row(session, project_id)
            condition: ColumnElement[bool] = SessionRow.state.in_(FINISHED_STATES)
            if older_than_seconds:
                condition = or_(condition, SessionRow.created_at < cutoff)
            rows = session.scalars(select(SessionRow).where(SessionRow.project_id == project_id, condition)).all()
        ended = [r.id for r in rows if r.state == RUNNING]
        for session_id in ended:
            self.end(project_id, session_id, reason="cleaned up")
        removed = [r.id for r in rows]
        with self._d.db.write() as session:
            for row in session.scalars(select(SessionRow).where(SessionRow.id.in_(removed))):
                session.delete(row)
        self._d.events.drop(removed)
        return removed, ended

    def mark_lost(self, kill: bool) -> list[str]:
        """At start-up: sessions marked running belong to a previous process; their pipes are gone."""
        with self._d.db.read() as session:
            rows = session.scalars(select(SessionRow).where(SessionRow.state == RUNNING)).all()
        lost = [r for r in rows if self._live.get(r.id) is None]
        for row in lost:
            if kill:
                with self._d.db.read() as session:
                    project = session.get(ProjectRow, row.project_id)
                if project is not None and project.container_id and row.pid:
                    try:
                        self._d.engine.kill_group(project.container_id, row.pid, self._d.settings.container_user)
                    except Exception:  # the container may be gone; the session is lost either way
                        log.debug("could not kill a lost session", exc_info=True)
            self._mark(row.id, LOST, "the runtime restarted while it ran")
        return [r.id for r in lost]
