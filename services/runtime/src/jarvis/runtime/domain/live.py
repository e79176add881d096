"""Running agent processes of this runtime: one reader thread each turns output into events."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from sqlalchemy import update

from jarvis.common.sql.types import utcnow
from jarvis.runtime.domain.agent_protocol import parse_line
from jarvis.runtime.domain.deps import Deps
from jarvis.runtime.domain.models import ENDED, EXITED, RUNNING
from jarvis.runtime.domain.ports import AgentProcess
from jarvis.runtime.storage.models import SessionRow

log = logging.getLogger(__name__)


@dataclass
class LiveSession:
    session_id: str
    project_id: str
    container_id: str
    protocol: str
    process: AgentProcess
    redact: tuple[bytes, ...] = ()  # secret values masked in its output before anything stores it
    stdin: bool = True  # takes messages on stdin (else a one-shot CLI whose stdin is closed)
    reader: threading.Thread | None = None
    done: threading.Event = field(default_factory=threading.Event)
    # Set at the first output on stdout, or at the end: a spawn waits on it to tell a start from a crash.
    started: threading.Event = field(default_factory=threading.Event)
    spoke: bool = False  # it wrote to stdout: it started, whatever its exit code later says
    timer: threading.Timer | None = None  # ends a session that outlives the runtime's session limit
    ending: str = ""  # why the session is being ended through the API (its exit then counts as ended)
    output_bytes: int = 0


class LiveSessions:
    """The sessions whose pipes this process holds; a restarted runtime holds none (they are `lost`)."""

    def __init__(self, deps: Deps) -> None:
        self._d = deps
        self._live: dict[str, LiveSession] = {}
        self._lock = threading.Lock()

    def get(self, session_id: str) -> LiveSession | None:
        with self._lock:
            return self._live.get(session_id)

    def of_project(self, project_id: str) -> list[LiveSession]:
        with self._lock:
            return [s for s in self._live.values() if s.project_id == project_id]

    def all(self) -> list[LiveSession]:
        with self._lock:
            return list(self._live.values())

    def start(self, live: LiveSession) -> None:
        with self._lock:
            self._live[live.session_id] = live
        live.reader = threading.Thread(target=self._pump, args=(live,), name=f"session-{live.session_id}", daemon=True)
        live.reader.start()

    def _pump(self, live: LiveSession) -> None:
        """Persist every output line as an event, in order; record how the process ended."""
        limit = self._d.settings.session_output_max_bytes
        try:
            for batch in live.process.batches():
                if live.output_bytes > limit:
                    continue  # killed for flooding: drain what is left, store nothing more
                batch = self._within_limit(live, batch, limit)
                self._d.events.append(
                    live.project_id,
                    live.session_id,
                    (parse_line(live.protocol, stream, line, live.redact) for stream, line in batch),
                )
                if any(stream == "stdout" for stream, _ in batch):
                    live.spoke = True
                    live.started.set()
                if live.output_bytes > limit:
                    self._flooded(live, limit)
            code = live.process.exit_code()
            state, detail = (ENDED, live.ending) if live.ending else (EXITED, "the agent process exited")
            with self._d.db.write() as session:
                session.execute(
                    update(SessionRow)
                    .where(SessionRow.id == live.session_id, SessionRow.state == RUNNING)
                    .values(state=state, exit_code=-1 if code is None else code, ended_at=utcnow(), detail=detail)
                )
                session.execute(
                    update(SessionRow)
                    .where(SessionRow.id == live.session_id, SessionRow.exit_code == -1)
                    .values(exit_code=-1 if code is None else code)
                )
            # After the state: a reader that sees the exit event also sees the session finished.
            self._d.events.append(live.project_id, live.session_id, [("exit", {"exit_code": code})])
        except Exception:
            log.exception("session reader failed", extra={"session": live.session_id})
        finally:
            live.process.close()
            if live.timer is not None:
                live.timer.cancel()
            with self._lock:
                self._live.pop(live.session_id, None)
            live.done.set()
            live.started.set()

    @staticmethod
    def _within_limit(live: LiveSession, batch: list[tuple[str, bytes]], limit: int) -> list[tuple[str, bytes]]:
        """The lines of `batch` up to the first past the session's output limit (one read can be large)."""
        for index, (_, line) in enumerate(batch):
            live.output_bytes += len(line) + 1
            if live.output_bytes > limit:
                return batch[: index + 1]
        return batch

    def _flooded(self, live: LiveSession, limit: int) -> None:
        """Contain an agent that writes without end: record why, kill it (its events stop here)."""
        live.ending = f"killed: it wrote more than {limit} bytes of output (JARVIS_RUNTIME_SESSION_OUTPUT_MAX_BYTES)"
        self._d.events.append(live.project_id, live.session_id, [("output_limit", {"max_bytes": limit})])
        try:
            self._d.engine.kill_group(live.container_id, live.process.pid, self._d.settings.container_user)
        except Exception:  # the container may be gone; its stream then ends anyway
            log.warning("could not kill a flooding session", extra={"session": live.session_id}, exc_info=True)
