"""Egress for containers without a network: the proxy's socket in the container, the bridge, the agent's env.

Every project container without a Docker network gets its egress directory mounted read-only at
CONTAINER_DIR and HTTP(S)_PROXY pointing at 127.0.0.1:<egress_port>. When the project may reach any host
(its preset's hosts or its own `egress_allow`), starting the container (and so every spawn) makes sure the
proxy serves the project's socket and a bridge (socat) runs in the container, forwarding that port to it.
The allowlist is read on every request: a change applies to the next connection.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from jarvis.common.errors import FailedPrecondition
from jarvis.runtime.domain.deps import Deps
from jarvis.runtime.domain.egress_policy import Allowlist, Policy
from jarvis.runtime.domain.ports import EgressServer, Mount
from jarvis.runtime.domain.presets import PRESETS
from jarvis.runtime.domain.rows import project_row
from jarvis.runtime.storage.models import ProjectRow

log = logging.getLogger(__name__)

CONTAINER_DIR = "/run/jarvis/egress"
SOCKET = "proxy.sock"
NO_PROXY = "localhost,127.0.0.1,::1"
BRIDGE_SETTLE_SECONDS = 0.3  # a bridge that cannot start (no socat, port taken) has exited by then
NOT_FOUND = 127


def preset_hosts(row: ProjectRow) -> Sequence[str]:
    """The model APIs a project's agent preset must reach; a custom agent command brings none."""
    return PRESETS[row.agent].hosts if row.agent in PRESETS else ()


class Egress:
    def __init__(
        self, deps: Deps, proxy: EgressServer, preset_hosts: Callable[[ProjectRow], Sequence[str]] = preset_hosts
    ) -> None:
        self._d = deps
        self._proxy = proxy
        # The hosts a project's agent preset must reach (its model API), besides those the project allows.
        self._preset_hosts = preset_hosts
        self._bridges: dict[str, str] = {}  # container id -> exec id of its bridge
        self._lock = threading.Lock()

    def applies(self, row: ProjectRow) -> bool:
        return self._d.settings.egress_enabled and not row.network

    def allowlist(self, row: ProjectRow) -> Allowlist:
        return Allowlist(tuple(dict.fromkeys([*self._preset_hosts(row), *(row.egress_allow or [])])))

    def policy(self, project_id: str) -> Policy:
        """What the proxy enforces for a project now (nothing, once the project is gone)."""
        with self._d.db.read() as session:
            row = session.get(ProjectRow, project_id)
            allowlist = self.allowlist(row) if row is not None and self.applies(row) else Allowlist(())
        return Policy(allowlist, frozenset(self._d.settings.egress_internal_hosts))

    def mounts(self, row: ProjectRow) -> list[Mount]:
        if not self.applies(row):
            return []
        directory = self._directory(row.id)
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._d.layout(row.id).hand_over(directory)
        return [Mount(directory, CONTAINER_DIR, read_only=True)]

    def env(self, row: ProjectRow) -> dict[str, str]:
        if not self.applies(row):
            return {}
        url = f"http://127.0.0.1:{self._d.settings.egress_port}"
        # Both spellings: curl and Python read the lower-case ones, Node and Go tools mostly the upper-case.
        return {
            "HTTPS_PROXY": url,
            "HTTP_PROXY": url,
            "https_proxy": url,
            "http_proxy": url,
            "NO_PROXY": NO_PROXY,
            "no_proxy": NO_PROXY,
        }

    def ensure(self, project_id: str, container_id: str) -> None:
        """The project's socket served and its container's bridge running, when it may reach any host."""
        with self._d.db.read() as session:
            row = project_row(session, project_id)
        if not self.applies(row) or not self.allowlist(row).entries:
            return
        directory = self._directory(row.id)
        if not directory.is_dir():
            raise FailedPrecondition(
                f"the container of project {project_id} was created without its egress "
                "directory; stop and start it (container action=stop, then start) to recreate it"
            )
        self._proxy.listen(row.id, directory / SOCKET, self._d.layout(row.id).owner)
        with self._lock:
            self._ensure_bridge(project_id, container_id)

    def _ensure_bridge(self, project_id: str, container_id: str) -> None:
        engine, s = self._d.engine, self._d.settings
        known = self._bridges.get(container_id)
        if known and engine.exec_exit_code(known, 0.0) is None:
            return
        values = {"port": str(s.egress_port), "socket": f"{CONTAINER_DIR}/{SOCKET}"}
        argv = [part.format(**values) for part in s.egress_bridge_command]
        try:
            exec_id = engine.exec_detached(container_id, argv, user=s.container_user)
        except FailedPrecondition as exc:
            # The engine refuses at once a program that is not in the image.
            missing = "executable file not found" in exc.message
            raise _bridge_failed(project_id, f"`{argv[0]}` is not in the image" if missing else exc.message) from exc
        code = engine.exec_exit_code(exec_id, BRIDGE_SETTLE_SECONDS)
        if code is not None:
            raise _bridge_failed(
                project_id, f"`{argv[0]}` is not in the image" if code == NOT_FOUND else f"it exited with code {code}"
            )
        self._bridges[container_id] = exec_id

    def forget(self, project_id: str, container_id: str = "") -> None:
        """The project's container stopped or went: stop serving its socket."""
        self._proxy.forget(project_id)
        with self._lock:
            self._bridges.pop(container_id, None)

    def close(self) -> None:
        self._proxy.close()

    def _directory(self, project_id: str) -> Path:
        return self._d.settings.egress_root / project_id


def _bridge_failed(project_id: str, why: str) -> FailedPrecondition:
    return FailedPrecondition(
        f"the egress bridge of project {project_id} did not start ({why}); use an image with "
        "socat, such as the agent image `jarvis image build` makes, or set "
        "JARVIS_RUNTIME_EGRESS_BRIDGE_COMMAND"
    )
