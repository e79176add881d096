"""Views of the runtime's objects, as agents read them (field names and order are the public contract)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ContainerView:
    id: str
    name: str
    image: str
    state: str
    user: str
    network: bool


@dataclass(frozen=True)
class ProjectView:
    id: str
    name: str
    source_url: str
    image: str
    agent_command: list[str]
    agent_protocol: str
    network: bool
    git: bool
    container: ContainerView | None  # absent when the runtime reports none
    sessions_running: int
    workspaces: int
    created_at: str | None  # RFC 3339
    agent: str
    egress_allow: list[str]


@dataclass(frozen=True)
class ProjectDeleted:
    project_id: str
    sessions_ended: int
    workspaces_removed: int
    container_removed: bool


@dataclass(frozen=True)
class LimitsView:
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
    read_only_root: bool
    no_new_privileges: bool
    cap_drop: list[str]
    container_user: str


@dataclass(frozen=True)
class AgentPresetView:
    name: str
    command: list[str]
    protocol: str
    prompt: str
    key_env: list[str]
    base_url_env: list[str]
    hosts: list[str]
    env: dict[str, str]
    description: str


@dataclass(frozen=True)
class ProjectOptions:
    default_image: str
    default_agent_command: list[str]
    agent_protocols: list[str]
    source_schemes: list[str]
    docker_host: str
    docker_reachable: bool
    docker_detail: str
    limits: LimitsView | None
    agents: list[AgentPresetView]
    default_agent: str


@dataclass(frozen=True)
class SecretView:
    """A secret's name and times; its value is write-only and no view carries it."""

    name: str
    created_at: str | None = None
    updated_at: str | None = None


@dataclass(frozen=True)
class ProjectTaskView:
    name: str
    source: str
    command: list[str]


@dataclass(frozen=True)
class ProjectChanges:
    workspace_id: str
    branch: str
    status: list[str]
    diff: str
    truncated: bool


@dataclass(frozen=True)
class ContainerLogs:
    logs: str
    truncated: bool


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool
    truncated: bool
    duration_ms: float


@dataclass(frozen=True)
class ImageRebuilt:
    build_id: str
    image: str
    ok: bool
    error: str
    log_tail: list[str]


@dataclass(frozen=True)
class SessionView:
    id: str
    project_id: str
    workspace_id: str
    state: str
    agent_command: list[str]
    agent_protocol: str
    exit_code: int
    events: int
    detail: str
    created_at: str | None
    ended_at: str | None
    idempotency_key: str
    agent: str


@dataclass(frozen=True)
class EventView:
    """A session event with its payload as JSON rather than a string inside a string."""

    seq: int
    type: str
    created_at: str | None
    payload: Any  # the agent's own JSON (or its raw text when that is not JSON); None when empty


@dataclass(frozen=True)
class SessionEvents:
    events: list[EventView]
    next_cursor: int
    state: str


@dataclass(frozen=True)
class SessionsCleaned:
    removed: list[str]
    ended: list[str]


@dataclass(frozen=True)
class ToolResponseDelivered:
    session_id: str
    request_id: str
    delivered: bool


@dataclass(frozen=True)
class WorkspaceView:
    id: str
    project_id: str
    kind: str
    branch: str
    path: str
    session_id: str
    created_at: str | None = None


@dataclass(frozen=True)
class WorkspaceDeleted:
    workspace_id: str
