"""What every use case is given: storage, the engine, git, the event log, settings and per-project locks."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from jarvis.common.sql.database import Database
from jarvis.runtime.domain.events import EventLog
from jarvis.runtime.domain.layout import ProjectLayout
from jarvis.runtime.domain.ports import Engine, Git
from jarvis.runtime.settings import RuntimeSettings

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
        """The labels of this instance's containers (of one project's, with `project_id`)."""
        labels = {LABEL_MANAGED: "1", LABEL_INSTANCE: self.settings.instance}
        if project_id:
            labels[LABEL_PROJECT] = project_id
        return labels

    def container_name(self, project_id: str) -> str:
        return f"jarvis-{self.settings.instance}-{project_id}"
