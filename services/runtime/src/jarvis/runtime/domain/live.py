"""Running agent processes of this runtime: one reader thread each turns output into events."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from sqlalchemy import update

from jarvis.common.sql.types import utcnow
from jarvis.runtime.domain.agent_protocol import parse_line
from jarvis.runtime.domain.context import Deps
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
    reader: threading.Thread | None = None
    done: threading.Event = field(default_factory=threading.Event)
    ending: str = ""  # why the session is being ended through the API (its exit then counts as ended)


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
        live.reader = threading.Thread(target=self._pump, args=(live,), name=f"session-{live.session_id}",
                                       daemon=True)
        live.reader.start()

    def _pump(self, live: LiveSession) -> None:
        """Persist every output line as an event, in order; record how the process ended."""
        try:
            for batch in live.process.batches():
                self._d.events.append(live.project_id, live.session_id,
                                      (parse_line(live.protocol, stream, line) for stream, line in batch))
            code = live.process.exit_code()
            state, detail = (ENDED, live.ending) if live.ending else (EXITED, "the agent process exited")
            with self._d.db.write() as session:
                session.execute(update(SessionRow).where(SessionRow.id == live.session_id, SessionRow.state == RUNNING)
                                .values(state=state, exit_code=-1 if code is None else code, ended_at=utcnow(),
                                        detail=detail))
                session.execute(update(SessionRow).where(SessionRow.id == live.session_id, SessionRow.exit_code == -1)
                                .values(exit_code=-1 if code is None else code))
            # After the state: a reader that sees the exit event also sees the session finished.
            self._d.events.append(live.project_id, live.session_id, [("exit", {"exit_code": code})])
        except Exception:
            log.exception("session reader failed", extra={"session": live.session_id})
        finally:
            live.process.close()
            with self._lock:
                self._live.pop(live.session_id, None)
            live.done.set()
