"""What the domain needs from the outside world; adapters (Docker SDK, git) implement these."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from jarvis.runtime.domain.models import Changes, ContainerInfo, ExecResult, ExitState


@dataclass(frozen=True)
class Mount:
    source: Path  # on the Docker host
    target: str  # inside the container
    read_only: bool = False


@dataclass(frozen=True)
class ContainerSpec:
    """Everything a project's or an MCP server's container is created with; the hardening lives in these fields."""

    name: str
    image: str
    labels: dict[str, str]
    mounts: list[Mount]
    user: str
    network: str  # "none" unless the project asked for a network
    memory: str
    cpus: float
    pids: int
    tmpfs_size: str
    workdir: str  # "": the image's own
    env: dict[str, str] = field(default_factory=dict)
    stdin: bool = False  # an MCP server: stdin open for one attached client (`docker run -i`)


class AgentProcess(Protocol):
    """A process inside a container with its stdin open: an agent session."""

    pid: int

    def write(self, data: bytes) -> None: ...

    def close_stdin(self) -> None: ...

    def batches(self) -> Iterator[list[tuple[str, bytes]]]:
        """Lines ("stdout" | "stderr", a line without its newline) grouped by read, until the process ends."""
        ...

    def exit_code(self) -> int | None: ...

    def close(self) -> None: ...


class AttachedStream(Protocol):
    """A container's stdio, attached before it started: stdin to write, stdout and stderr as they come."""

    def write(self, data: bytes) -> None: ...

    def close_stdin(self) -> None: ...

    def chunks(self) -> Iterator[list[tuple[str, bytes]]]:
        """("stdout" | "stderr", bytes) grouped by read, until the container's output ends or `close()`."""
        ...

    def close(self) -> None:
        """Release the stream; safe from any thread, and `chunks()` then ends."""


class Engine(Protocol):
    """A Docker engine."""

    host: str

    def ping(self) -> None:
        """Raise Unavailable (naming the engine and what to do) when it cannot be reached."""

    def image_exists(self, image: str) -> bool: ...

    def image_user(self, image: str) -> str | None:
        """The user the image's config names ("" when none), or None when the image is not on the engine."""

    def attach(self, container_id: str) -> AttachedStream: ...

    def exit_state(self, container_id: str, wait: float) -> ExitState:
        """How the container ended, waiting up to `wait` seconds for it to stop running."""

    def list_managed(self, labels: dict[str, str]) -> list[ContainerInfo]: ...

    def inspect(self, container_id: str) -> ContainerInfo | None: ...

    def create(self, spec: ContainerSpec, command: Sequence[str]) -> str: ...

    def start(self, container_id: str) -> None: ...

    def stop(self, container_id: str, grace_seconds: int) -> None: ...

    def remove(self, container_id: str) -> None: ...

    def logs(self, container_id: str, tail: int, since: int) -> str: ...

    def exec(
        self, container_id: str, argv: Sequence[str], *, workdir: str, user: str, timeout: float, max_output: int
    ) -> ExecResult: ...

    def spawn(
        self, container_id: str, argv: Sequence[str], *, workdir: str, user: str, env: dict[str, str]
    ) -> AgentProcess: ...

    def kill_group(self, container_id: str, pid: int, user: str) -> None: ...

    def exec_detached(self, container_id: str, argv: Sequence[str], *, user: str) -> str:
        """Start a background process in the container (no streams attached); its exec id."""

    def exec_exit_code(self, exec_id: str, wait: float = 5.0) -> int | None:
        """The exit code of an exec, waiting up to `wait` seconds; None while it still runs."""

    def kill_marked(self, container_id: str, user: str) -> int:
        """Kill every process group an exec of a previous runtime left running in the container; how many."""

    def build(self, context: Path, dockerfile: str, tag: str, timeout: float, on_line: Callable[[str], None]) -> None:
        """Build `tag`; raise FailedPrecondition with the builder's message when a step fails."""


class EgressServer(Protocol):
    """The egress proxy (adapters/egress_proxy.py): one unix socket per project, policy looked up per request."""

    def listen(self, project_id: str, path: Path, owner: tuple[int, int] | None) -> None:
        """Serve the project on the unix socket `path` (mode 0600, owned by `owner` when given); idempotent."""

    def forget(self, project_id: str) -> None: ...

    def close(self) -> None: ...


class Git(Protocol):
    """git on the runtime's host, never through a shell; see adapters/git.py for the hardening."""

    def clone(self, source: str, target: Path, timeout: float) -> None: ...

    def add_worktree(self, repo: Path, path: Path, branch: str) -> None: ...

    def remove_worktree(self, repo: Path, path: Path, name: str) -> None: ...

    def changes(self, repo: Path, path: Path, name: str, max_bytes: int) -> Changes: ...
