"""The runtime's composition root: storage, the Docker engine, git and every use case."""

from __future__ import annotations

import logging
import threading
from typing import Any

from cryptography.fernet import MultiFernet

from jarvis.common.errors import JarvisError
from jarvis.common.sql.database import Database
from jarvis.runtime.adapters.docker_engine import DockerEngine
from jarvis.runtime.adapters.egress_proxy import Connector, EgressProxy, SystemResolver, open_tcp
from jarvis.runtime.adapters.git import HostGit
from jarvis.runtime.domain import images, tasks
from jarvis.runtime.domain.containers import Containers
from jarvis.runtime.domain.deps import Deps
from jarvis.runtime.domain.egress import Egress
from jarvis.runtime.domain.events import EventLog
from jarvis.runtime.domain.live import LiveSessions
from jarvis.runtime.domain.models import BuildResult, Limits, Task
from jarvis.runtime.domain.ports import Engine, Git
from jarvis.runtime.domain.projects import Projects
from jarvis.runtime.domain.rows import project_row
from jarvis.runtime.domain.secrets import Secrets, load_key
from jarvis.runtime.domain.servers import Servers
from jarvis.runtime.domain.sessions import Sessions
from jarvis.runtime.domain.workspaces import Workspaces
from jarvis.runtime.settings import RuntimeSettings
from jarvis.runtime.storage.migrate import MIGRATIONS

log = logging.getLogger(__name__)


class Runtime:
    """Use cases over one database and one Docker engine.

    Reconciliation (orphan containers, sessions lost by a previous process, half-created
    projects, server containers whose stdio went with a previous process) runs once the engine is
    reachable: at start, or before the first call needing it.
    """

    def __init__(
        self,
        settings: RuntimeSettings,
        db: Database,
        engine: Engine,
        git: Git,
        secrets_keys: MultiFernet,
        egress_connector: Connector = open_tcp,
    ) -> None:
        self.settings = settings
        self.db = db
        self.engine = engine
        self.deps = Deps(
            db=db, engine=engine, git=git, events=EventLog(db, settings.event_payload_max_bytes), settings=settings
        )
        self.live = LiveSessions(self.deps)
        self.workspaces = Workspaces(self.deps)
        # Tests pass a connector that reaches loopback only; the resolver answers from egress_resolve first.
        proxy = EgressProxy(
            lambda project: self.egress.policy(project), SystemResolver(settings.egress_resolve), egress_connector
        )
        self.egress = Egress(self.deps, proxy)
        self.containers = Containers(
            self.deps, self.egress, on_stop=lambda project, why: self._end_project(project, why)
        )
        self.secrets = Secrets(db, secrets_keys)
        self.sessions = Sessions(self.deps, self.live, self.containers, self.workspaces, self.secrets)
        self.projects = Projects(self.deps, self.containers, self.sessions)
        self.servers = Servers(self.deps)
        self._reconciled = threading.Event()
        self._reconcile_lock = threading.Lock()

    @classmethod
    def open(cls, settings: RuntimeSettings, egress_connector: Connector = open_tcp) -> Runtime:
        settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        # First: a deployment without its secrets key stops here, before touching anything.
        key = load_key(
            settings.secrets_key.get_secret_value(),
            settings.secrets_key_file,
            settings.data_dir if settings.secrets_key_create else None,
        )
        db = MIGRATIONS.open_database(settings.database_url)
        return cls(
            settings,
            db,
            DockerEngine(settings.docker_host),
            HostGit(settings.data_dir / "git-home", internal_hosts=settings.egress_internal_hosts),
            key,
            egress_connector,
        )

    def _end_project(self, project_id: str, reason: str) -> None:
        self.sessions.end_project(project_id, reason, force=True)

    def reconcile(self) -> dict[str, Any]:
        """Make Docker, the database and the disk agree; safe to call again, does the work once."""
        with self._reconcile_lock:
            if self._reconciled.is_set():
                return {}
            self.engine.ping()
            servers = self.servers.reap()
            containers = self.containers.reconcile()
            strays = self.containers.kill_stray_execs()
            lost = self.sessions.mark_lost(kill=True)
            swept = self.projects.sweep_staging()
            self._reconciled.set()
        summary = {
            **containers,
            "stray_execs_killed": strays,
            "lost_sessions": lost,
            "swept": swept,
            "servers_removed": servers,
        }
        log.info("runtime reconciled", extra=summary)
        return summary

    def try_reconcile(self) -> None:
        """Reconcile if the engine answers; otherwise leave it for the first call that needs the engine."""
        try:
            self.reconcile()
        except JarvisError as exc:
            # The reason in the line itself: a plain-text log drops `extra`, and "not yet" alone says nothing to do.
            log.warning(
                "runtime not reconciled yet: %s; projects and agent sessions wait for the Docker engine, everything "
                "else works",
                exc.message,
                extra={"reason": exc.message},
            )

    def ensure_reconciled(self) -> None:
        if not self._reconciled.is_set():
            self.reconcile()

    def tasks(self, project_id: str) -> list[Task]:
        with self.db.read() as session:
            row = project_row(session, project_id)
        return tasks.detect(self.deps.layout(row.id).repo)

    def rebuild(self, project_id: str) -> BuildResult:
        return images.rebuild(self.deps, project_id)

    def limits(self) -> Limits:
        s = self.settings
        return Limits(
            memory=s.memory,
            cpus=s.cpus,
            pids=s.pids,
            exec_timeout_seconds=s.exec_timeout_seconds,
            exec_timeout_max_seconds=s.exec_timeout_max_seconds,
            exec_output_max_bytes=s.exec_output_max_bytes,
            session_end_grace_seconds=s.session_end_grace_seconds,
            event_payload_max_bytes=s.event_payload_max_bytes,
            events_page_max=s.events_page_max,
            tmpfs_size=s.tmpfs_size,
            container_user=s.container_user,
        )

    def docker_status(self) -> tuple[bool, str]:
        try:
            self.engine.ping()
        except JarvisError as exc:
            return False, exc.message
        return True, f"the Docker engine at {self.engine.host} answered"

    def close(self) -> None:
        """Remove server containers, stop reading sessions (agents see their input close), release the database."""
        self.servers.close_all()
        for live in self.live.all():
            live.process.close_stdin()
        for live in self.live.all():
            live.done.wait(2)
        self.egress.close()
        self.db.close()
