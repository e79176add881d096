"""Starting an agent session, in the order it happens: the idempotency key, the launch plan, the container, the
workspace and the agent's process, the session's record and first events, and the agent's first words."""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sqlalchemy import select

from jarvis.common import tracing
from jarvis.common.errors import AlreadyExists, FailedPrecondition, InvalidArgument
from jarvis.common.sql.types import utcnow
from jarvis.runtime.domain.agents import Launch, launch
from jarvis.runtime.domain.containers import Containers
from jarvis.runtime.domain.deps import Deps
from jarvis.runtime.domain.layout import CONTAINER_TMP
from jarvis.runtime.domain.live import LiveSession, LiveSessions
from jarvis.runtime.domain.models import EXITED, RUNNING, Workspace
from jarvis.runtime.domain.ports import AgentProcess
from jarvis.runtime.domain.rows import project_row, session_row
from jarvis.runtime.domain.secrets import Secrets
from jarvis.runtime.domain.validate import check_id, new_id
from jarvis.runtime.domain.workspaces import Workspaces
from jarvis.runtime.storage.models import ProjectRow, SessionRow

log = logging.getLogger(__name__)
MAX_IDEMPOTENCY_KEY = 200  # the column's width
# Printable ASCII without spaces: safe to log, to compare byte for byte and to pass through any transport.
_IDEMPOTENCY_KEY = re.compile(rf"[!-~]{{1,{MAX_IDEMPOTENCY_KEY}}}")


def check_idempotency_key(key: str) -> str | None:
    """The key to store, None for none (""); InvalidArgument naming what is allowed otherwise."""
    if not key:
        return None
    if not _IDEMPOTENCY_KEY.fullmatch(key):
        raise InvalidArgument(
            f"idempotency_key must be 1 to {MAX_IDEMPOTENCY_KEY} printable ASCII characters "
            "without spaces (letters, digits, punctuation), e.g. a task or delivery id; "
            "leave it empty for none"
        )
    return key


AGENT_ENV_PREFIX = "JARVIS_"
_RUNTIME_OWN = frozenset({"JARVIS_SESSION_ID", "JARVIS_PROJECT_ID", "JARVIS_WORKSPACE"})
_ENV_NAME = re.compile(r"JARVIS_[A-Z0-9_]{1,60}")


def checked_agent_env(env: Mapping[str, str]) -> dict[str, str]:
    """Jarvis's own variables for an agent: JARVIS_* names the runtime does not set itself, bounded values."""
    for name, value in env.items():
        if not _ENV_NAME.fullmatch(name) or name in _RUNTIME_OWN:
            raise InvalidArgument(
                f"agent_env may only set JARVIS_* variables (upper case) other than {', '.join(sorted(_RUNTIME_OWN))}"
            )
        if len(value) > 16 * 1024 or "\0" in value:
            raise InvalidArgument(f"agent_env {name} is too long or holds a NUL byte")
    return dict(env)


@dataclass(frozen=True)
class Started:
    """A spawn's outcome: the session's row, and for a session this call started, its live process and whether
    its workspace was made for it. `live` is None when another call had spawned the session with the same key."""

    row: SessionRow
    live: LiveSession | None = None
    workspace_created: bool = False


class Spawner:
    """Starts agent sessions; `expire(project_id, session_id, reason)` ends one that outlives its limit."""

    def __init__(
        self,
        deps: Deps,
        live: LiveSessions,
        containers: Containers,
        workspaces: Workspaces,
        secrets: Secrets,
        expire: Callable[[str, str, str], None],
    ) -> None:
        self._d = deps
        self._live = live
        self._containers = containers
        self._workspaces = workspaces
        self._secrets = secrets
        self._expire = expire

    def spawned_with(self, project_id: str, key: str | None) -> SessionRow | None:
        """The project's session spawned with `key` (none without a key)."""
        if key is None:
            return None
        with self._d.db.read() as session:
            project_row(session, project_id)  # an unknown project is named as such, not as "no session"
            return session.scalars(
                select(SessionRow).where(SessionRow.project_id == project_id, SessionRow.idempotency_key == key)
            ).first()

    def start(
        self,
        project_id: str,
        workspace_id: str,
        key: str | None,
        prompt: str,
        agent: str,
        overrides: Mapping[str, str],
        session_id: str = "",
        agent_env: Mapping[str, str] | None = None,
    ) -> Started:
        """Start the agent in the workspace (a new one unless given), in the project's container (started if
        needed); or find the session another call spawned with `key`."""
        with self._d.db.read() as session:
            project = project_row(session, project_id)
        session_id = check_id("session", session_id) if session_id else new_id("session")
        how = self._plan(project, session_id, agent, prompt, overrides, checked_agent_env(agent_env or {}))
        container = self._containers.start(project_id)
        with self._d.locks.hold(project_id):
            # Again under the project's lock: a concurrent spawn with the key in this process has finished by now.
            earlier = self.spawned_with(project_id, key)
            if earlier is not None:
                return Started(earlier)
            created = not workspace_id
            workspace = (
                self._workspaces.create(project_id)
                if created
                else self._workspaces.check_free(project_id, workspace_id)
            )
            process = self._run(container.id, how, workspace, created)
            try:
                row = self._record(session_id, project, workspace.id, process.pid, key, how)
            except BaseException as exc:
                self._abandon(container.id, process, project_id, workspace.id if created else "")
                # With a key, only another runtime sharing the database gets here: its insert won the race.
                earlier = self.spawned_with(project_id, key) if isinstance(exc, AlreadyExists) else None
                if earlier is None:
                    raise
                return Started(earlier)
            self._announce(project_id, session_id, workspace, how, prompt)
            live = LiveSession(
                session_id, project_id, container.id, how.protocol, process, redact=how.redact, stdin=how.stdin_prompt
            )
            if not how.stdin_prompt:
                process.close_stdin()  # a one-shot CLI must not wait for more input
            self._watch(live)
            self._live.start(live)
        return Started(row, live, created)

    def _plan(
        self,
        project: ProjectRow,
        session_id: str,
        agent: str,
        prompt: str,
        overrides: Mapping[str, str],
        agent_env: Mapping[str, str],
    ) -> Launch:
        """How to launch the agent; checked before anything starts: an unknown agent, a missing key or override
        changes nothing."""
        base_env = {"HOME": CONTAINER_TMP, "JARVIS_SESSION_ID": session_id, "JARVIS_PROJECT_ID": project.id}
        # Where traced, the agent is in the trace of what spawned it (a schedule's run, a person's call):
        # TRACEPARENT/TRACESTATE, for an agent whose calls back into Jarvis carry them (decision 0066).
        base_env |= tracing.environment()
        return launch(
            project.agent,
            project.agent_command,
            project.agent_protocol,
            agent,
            prompt,
            base_env,
            self._secrets.environment(project.id, overrides),
            masked=agent_env,
        )

    def _run(self, container_id: str, how: Launch, workspace: Workspace, workspace_created: bool) -> AgentProcess:
        """The agent's process in the workspace; a workspace made for it goes if it cannot start."""
        try:
            return self._d.engine.spawn(
                container_id,
                how.argv,
                workdir=workspace.path,
                user=self._d.settings.container_user,
                env={**how.env, "JARVIS_WORKSPACE": workspace.path},
            )
        except BaseException:
            if workspace_created:
                self._workspaces.delete(workspace.project_id, workspace.id)
            raise

    def _record(
        self, session_id: str, project: ProjectRow, workspace_id: str, pid: int, key: str | None, how: Launch
    ) -> SessionRow:
        """Insert the running session; AlreadyExists when a session of the project already has the key."""
        with self._d.db.write() as session:
            row = SessionRow(
                id=session_id,
                project_id=project.id,
                workspace_id=workspace_id,
                state=RUNNING,
                agent_command=list(how.command),
                agent_protocol=how.protocol,
                agent=how.agent,
                pid=pid,
                exit_code=-1,
                detail="",
                created_at=utcnow(),
                idempotency_key=key,
            )
            session.add(row)
        return row

    def _abandon(self, container_id: str, process: AgentProcess, project_id: str, workspace_id: str) -> None:
        """Undo a spawn whose session could not be recorded: kill its agent, remove the workspace made for it."""
        try:
            self._d.engine.kill_group(container_id, process.pid, self._d.settings.container_user)
        except Exception:  # the caller's outcome matters more; a stray agent ends with its container
            log.warning("could not kill an abandoned agent process", exc_info=True)
        process.close()
        if workspace_id:
            self._workspaces.delete(project_id, workspace_id)

    def _announce(self, project_id: str, session_id: str, workspace: Workspace, how: Launch, prompt: str) -> None:
        """The session's first events: where and what it runs, and the prompt given on its command line."""
        start = {
            "workspace_id": workspace.id,
            "path": workspace.path,
            "agent": how.agent or "custom",
            "agent_command": how.command,
        }
        self._d.events.append(
            project_id,
            session_id,
            [("session_start", start), *([("input", {"text": prompt})] if not how.stdin_prompt else [])],
        )

    def _watch(self, live: LiveSession) -> None:
        """End a session that runs longer than the runtime allows (an agent that never ends)."""
        limit = self._d.settings.session_max_seconds
        if limit <= 0:
            return
        reason = f"it ran longer than {limit} s (JARVIS_RUNTIME_SESSION_MAX_SECONDS)"
        live.timer = threading.Timer(limit, self._expire, args=(live.project_id, live.session_id, reason))
        live.timer.daemon = True
        live.timer.start()

    def check_started(self, project_id: str, started: Started) -> None:
        """Raise with the agent's own words when it exited with an error before its first output."""
        row, live = started.row, started.live
        assert live is not None, "only a session this call started is checked"
        live.started.wait(self._d.settings.spawn_grace_seconds)
        if live.spoke or not live.done.is_set():
            return  # it spoke (a quick failure after that is its turn's outcome), or at least still runs
        with self._d.db.read() as session:
            ended = session_row(session, project_id, row.id)
        if ended.exit_code == 0 or ended.state != EXITED:
            return
        stderr = [json.loads(e.payload_json).get("text", "") for e in self._d.events.find(row.id, ("stderr",), "")]
        said = " | ".join(line for line in stderr if line)[-600:]
        hint = ""
        if ended.exit_code == 127:
            hint = (
                f"; `{ended.agent_command[0]}` is not in the project's image: use an image with the agent's CLI "
                "(build the agent image with `jarvis image build`) or choose another agent"
            )
        if started.workspace_created:
            self._workspaces.delete(project_id, row.workspace_id)
        raise FailedPrecondition(
            f"the agent could not start (session {row.id}): it exited with code "
            f"{ended.exit_code}{': ' + said if said else ''}{hint}"
        )
