"""What the runtime's use cases return: plain records, independent of storage and transport."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

RUNNING = "running"
EXITED = "exited"  # the agent process ended by itself
ENDED = "ended"  # ended through the API, or by its container stopping
LOST = "lost"  # the runtime restarted while it ran; its pipes are gone
FINISHED_STATES = (EXITED, ENDED, LOST)
PROTOCOLS = ("stream-json", "codex-json", "gemini-json", "opencode-json", "text")


@dataclass(frozen=True)
class ContainerInfo:
    id: str
    name: str
    image: str
    state: str
    user: str = ""
    network: bool = False
    labels: dict[str, str] = field(default_factory=dict)


ABSENT = ContainerInfo(id="", name="", image="", state="absent")


@dataclass(frozen=True)
class Project:
    id: str
    name: str
    source_url: str
    image: str
    agent_command: tuple[str, ...]
    agent_protocol: str
    agent: str  # a preset's name; "": a custom command
    network: bool
    git: bool
    created_at: datetime
    container: ContainerInfo = ABSENT
    egress_allow: tuple[str, ...] = ()
    sessions_running: int = 0
    workspaces: int = 0


@dataclass(frozen=True)
class Workspace:
    id: str
    project_id: str
    kind: str  # "worktree" or "directory"
    branch: str
    path: str  # inside the container
    created_at: datetime
    session_id: str = ""


@dataclass(frozen=True)
class Session:
    id: str
    project_id: str
    workspace_id: str
    state: str
    agent_command: tuple[str, ...]
    agent_protocol: str
    agent: str
    exit_code: int
    events: int
    detail: str
    created_at: datetime
    ended_at: datetime | None
    idempotency_key: str = ""  # the key it was spawned with; "": none


@dataclass(frozen=True)
class Event:
    seq: int
    type: str
    payload_json: str
    created_at: datetime


@dataclass(frozen=True)
class EventPage:
    events: list[Event]
    next_cursor: int
    state: str


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool
    truncated: bool
    duration_ms: float


@dataclass(frozen=True)
class Changes:
    workspace_id: str
    branch: str
    status: list[str]
    diff: str
    truncated: bool


@dataclass(frozen=True)
class Task:
    name: str
    source: str
    command: tuple[str, ...]


@dataclass(frozen=True)
class BuildResult:
    build_id: str
    image: str
    ok: bool
    error: str
    log_tail: list[str]


@dataclass(frozen=True)
class DeleteResult:
    project_id: str
    sessions_ended: int
    workspaces_removed: int
    container_removed: bool


@dataclass(frozen=True)
class Limits:
    memory: str
    cpus: float
    pids: int
    exec_timeout_seconds: int
    exec_timeout_max_seconds: int
    exec_output_max_bytes: int
    session_end_grace_seconds: int
    event_payload_max_bytes: int
    events_page_max: int
    tmpfs_size: str
    container_user: str
    read_only_root: bool = True
    no_new_privileges: bool = True
    cap_drop: tuple[str, ...] = ("ALL",)


@dataclass(frozen=True)
class ServerLaunch:
    """An MCP server image to run with its stdio attached (`docker run -i IMAGE ARGS` semantics)."""

    server: str
    image: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ServerStarted:
    container_id: str
    container_name: str
    image: str


@dataclass(frozen=True)
class ServerOutput:
    stream: str  # "stdout" or "stderr"
    data: bytes


@dataclass(frozen=True)
class ServerExited:
    exit_code: int  # -1: unknown (removed before it reported one)
    oom_killed: bool = False
    detail: str = ""


@dataclass(frozen=True)
class ExitState:
    """How a container ended, as the engine reports it; `exit_code` None while it runs or once removed."""

    exit_code: int | None
    oom_killed: bool = False
    error: str = ""
