"""Project introspection: the five tools of a project's own MCP server (spec 004), over stdio.

The project is the directory named by JARVIS_DEBUG_PROJECT_DIR (read on every call, like the
other backends' credentials), scaffolded with `jarvis scaffold project-server DIR`. The first
call starts its server through `ProjectServerLifecycleManager` (MCP handshake first); later
calls reuse it; a crashed server is started again by the next call; a changed setting moves
to the new project. Tool names, descriptions and parameters come from the template's own tool
table, so the gateway and the server cannot describe the tools differently.
"""

from __future__ import annotations

import atexit
import logging
import re
import sys
import threading
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack
from functools import partial
from pathlib import Path
from typing import Any

import mcp_types as types
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp.shared.exceptions import MCPError

from jarvis.common.errors import FailedPrecondition, InvalidArgument, NotFound, Unavailable
from jarvis.common.params import Param
from jarvis.debug.backends.base import ToolSpec
from jarvis.debug.backends.credentials import Credentials
from jarvis.projectserver.lifecycle import (
    CRASH_EVENT,
    ProjectServerCrash,
    ProjectServerError,
    ProjectServerLifecycleManager,
    default_argv,
)
from jarvis.projectserver.scaffold import template_refused_state_names, template_tool_schemas

log = logging.getLogger(__name__)

NAME = "JARVIS_DEBUG_PROJECT_DIR"
PREFIX = "project_"
# Above the server's own bounds: capture_trace ≤ 30 s, run_test_task ≤ test_timeout_seconds (300 s).
CALL_TIMEOUT = 360.0


def _params(schema: Mapping[str, Any]) -> tuple[Param, ...]:
    """The gateway's view of a JSON input schema (length bounds stay with the server, which checks them)."""
    required = set(schema.get("required", ()))
    return tuple(
        Param(
            name,
            prop["type"],
            prop["description"],
            required=name in required,
            default=prop.get("default"),
            enum=tuple(prop.get("enum", ())),
            minimum=prop.get("minimum"),
            maximum=prop.get("maximum"),
        )
        for name, prop in schema["properties"].items()
    )


class ProjectBackend:
    """Calls the project server of the directory in JARVIS_DEBUG_PROJECT_DIR, starting it when needed."""

    category = "project"
    description = "The project's own MCP server: live state, pytest, SQLite, profiles, NDJSON logs"

    def __init__(self, credentials: Credentials, python: str = sys.executable) -> None:
        self._credentials = credentials
        self._python = python
        self._schemas = template_tool_schemas()
        self._refused_names = re.compile(template_refused_state_names(), re.IGNORECASE)
        self._specs = tuple(
            ToolSpec(PREFIX + name, spec["description"], _params(spec["inputSchema"]))
            for name, spec in self._schemas.items()
        )
        self._lock = threading.Lock()
        # The manager's tasks run on an event loop in a (daemon) thread; calls come from any thread.
        self._loop = ExitStack()
        self._portal: BlockingPortal | None = None
        self._manager: ProjectServerLifecycleManager | None = None
        self._context: AbstractContextManager[ProjectServerLifecycleManager] | None = None
        atexit.register(self.close)

    def tools(self) -> Sequence[ToolSpec]:
        return self._specs

    def call(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        name = tool.removeprefix(PREFIX)
        if name not in self._schemas:
            raise NotFound(f"the project backend has no tool '{tool}'")
        sent = {k: v for k, v in arguments.items() if v is not None}
        self._refuse_secret_state(name, sent)
        manager, portal = self._running(self._project_dir())
        try:
            result = portal.call(partial(manager.call_tool, name, sent, CALL_TIMEOUT))
        except MCPError as exc:
            if exc.code == types.INVALID_PARAMS:
                raise InvalidArgument(f"the project server rejected the arguments: {exc.error.message}") from None
            raise Unavailable(f"the project server did not answer {name}: {exc.error.message}") from None
        except ProjectServerError as exc:
            raise Unavailable(f"the project server is not running: {exc}") from None
        text = "".join(c.text for c in result.content if isinstance(c, types.TextContent))
        if result.is_error:
            raise FailedPrecondition(f"the project server could not run {name}: {text}")
        return result.structured_content if result.structured_content is not None else text

    def _refuse_secret_state(self, name: str, arguments: Mapping[str, Any]) -> None:
        """No environment or credential path reaches a server, even one scaffolded before it refused them itself."""
        path = arguments.get("path")
        if (
            name == "inspect_state"
            and isinstance(path, str)
            and any(self._refused_names.search(segment) for segment in path.split("."))
        ):
            raise InvalidArgument(
                f"'{path[:200]}' names the process environment or a credential, which "
                "project_inspect_state never reads; inspect the application's own state instead"
            )

    def close(self) -> None:
        """Stop the project server (SIGTERM, then SIGKILL after the grace period) and the event loop."""
        with self._lock:
            self._stop_server()
            self._loop.close()
            self._portal = None

    def _project_dir(self) -> Path:
        value = self._credentials.get(NAME)
        if not value:
            raise FailedPrecondition(
                f"project introspection is not configured: set {NAME} to a project directory in "
                f"{self._credentials.where()}; create its server with `jarvis scaffold project-server DIR`."
            )
        project = Path(value).expanduser().resolve()
        if not (project / "mcp-server" / "src" / "project_mcp_server").is_dir():
            raise FailedPrecondition(
                f"{NAME} names {project}, which has no project server (mcp-server/); "
                f"create it with `jarvis scaffold project-server {project}`."
            )
        return project

    def _running(self, project: Path) -> tuple[ProjectServerLifecycleManager, BlockingPortal]:
        """The manager of `project`'s server, started; one start at a time."""
        with self._lock:
            if self._manager is not None and self._manager.project_dir != project:
                self._stop_server()  # the setting changed: serve the project it names now
            if self._portal is None:
                self._portal = self._loop.enter_context(start_blocking_portal(name="project-server-loop"))
            portal = self._portal
            if self._manager is None:
                manager = ProjectServerLifecycleManager(project, argv=default_argv(project, self._python))
                manager.on(CRASH_EVENT, _log_crash)
                self._context = portal.wrap_async_context_manager(manager)
                self._manager = self._context.__enter__()
            if not self._manager.running:
                try:
                    portal.call(self._manager.start)
                except ProjectServerError as exc:
                    raise Unavailable(f"could not start the project server of {project}: {exc}") from None
            return self._manager, portal

    def _stop_server(self) -> None:
        if self._context is not None:
            self._context.__exit__(None, None, None)
        self._context = self._manager = None


def _log_crash(crash: ProjectServerCrash) -> None:
    # The stderr tail may quote anything the project printed, so it stays out of the service log.
    log.warning("project server exited unexpectedly", extra={"pid": crash.pid, "exit_code": crash.exit_code})
