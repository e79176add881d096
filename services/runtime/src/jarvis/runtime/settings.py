"""Settings of the runtime process (env prefix JARVIS_RUNTIME_)."""

from __future__ import annotations

import hashlib
import ipaddress
import os
from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from jarvis.common.roots import default_roots, parse_roots
from jarvis.common.settings import ProcessSettings
from jarvis.runtime.domain.egress_policy import check_names

# socat forks one child per connection; reuseport lets a second bridge (after a runtime restart) listen too.
DEFAULT_BRIDGE_COMMAND = [
    "socat",
    "-b",
    "262144",
    "TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr,reuseport",
    "UNIX-CONNECT:{socket}",
]


def _default_container_user() -> str:
    # As root, files the runtime creates are handed to an unprivileged uid; otherwise the container
    # runs as the runtime's own uid, so both sides can write the workspace.
    uid, gid = os.geteuid(), os.getegid()
    return "1000:1000" if uid == 0 else f"{uid}:{gid}"


class RuntimeSettings(ProcessSettings):
    """Where the runtime keeps its data, the Docker engine it drives and the limits it enforces."""

    model_config = SettingsConfigDict(env_prefix="JARVIS_RUNTIME_", extra="ignore", validate_by_name=True)

    data_dir: Path = Field(
        default=Path("~/.jarvis/runtime"),
        description="Runtime state: runtime.db (SQLite) and projects/ (checkouts, workspaces).",
    )
    database_url: str = Field(
        default="",
        validation_alias=AliasChoices("JARVIS_RUNTIME_DATABASE_URL", "DATABASE_URL"),
        description="SQLAlchemy URL; empty means SQLite at <data_dir>/runtime.db.",
    )
    listen: str = Field(default="127.0.0.1:0", description="gRPC listen address (host:port or unix:path).")
    docker_host: str = Field(
        default="unix:///var/run/docker.sock",
        validation_alias=AliasChoices("JARVIS_RUNTIME_DOCKER_HOST", "DOCKER_HOST"),
    )
    # Containers carry this label value; reconciliation only ever touches its own instance's containers.
    instance: str = Field(default="", description="Instance label; empty: derived from the database URL.")
    image: str = Field(default="jarvis-agent:latest", description="Default image of project containers.")
    agent: str = Field(
        default="claude",
        description="Default agent preset of new projects (claude, codex, gemini, "
        "opencode, aider); ignored when agent_command is set.",
    )
    agent_command: list[str] = Field(default_factory=list, description="A custom default agent command (JSON list).")
    agent_protocol: str = "stream-json"
    # Secrets are sealed with this Fernet key. Deployed, one of the two is required; embedded Jarvis
    # creates <data_dir>/secrets.key (owner-only) when neither is given.
    secrets_key: SecretStr = Field(default=SecretStr(""))
    secrets_key_file: Path | None = None
    secrets_key_create: bool = Field(
        default=False, description="Create the key in the data dir when none is given (embedded mode)."
    )
    # A spawn waits this long for the agent's first output (or its exit) so one that cannot start fails the spawn.
    spawn_grace_seconds: float = 1.5
    session_max_seconds: int = Field(
        default=86400, description="A session still running after this is killed (0: no limit)."
    )
    session_output_max_bytes: int = Field(
        default=64 * 1024 * 1024, description="Output a session may write before it is killed (its events stop)."
    )
    container_user: str = Field(default_factory=_default_container_user)
    network: str = Field(default="bridge", description="Docker network of projects that ask for one.")
    # MCP server containers (AttachServer) talk over their stdio; a server that calls an API needs a network,
    # which the operator names here (e.g. a docker network with egress rules). Memory, CPU and pids limits are
    # those of project containers.
    server_network: str = Field(default="none", description="Docker network of MCP server containers.")
    memory: str = "1g"
    cpus: float = 1.0
    pids: int = 256
    tmpfs_size: str = "256m"
    exec_timeout_seconds: int = 60
    exec_timeout_max_seconds: int = 1800
    exec_output_max_bytes: int = 256 * 1024
    session_end_grace_seconds: int = 5
    event_payload_max_bytes: int = 256 * 1024
    events_page_max: int = 500
    clone_timeout_seconds: int = 300
    build_timeout_seconds: int = 1800
    logs_tail_default: int = 200
    max_workers: int = 64
    # `session events wait=N` long-polls waiting at once (at most half of max_workers counts): one more answers at
    # once with what there is, so waiting callers can never hold the threads every other call needs.
    max_waiting_polls: int = 8
    # Per token (the one that created the project; admin tokens and the local user are exempt): the projects it may
    # own, and how many of their containers may run at once. 0: no cap.
    max_projects_per_token: int = 20
    max_running_containers_per_token: int = 10
    # Local and file:// project sources must lie under one of these (jarvis.common.roots); default: the home.
    project_roots: list[Path] = Field(
        default_factory=default_roots,
        validation_alias=AliasChoices("JARVIS_RUNTIME_PROJECT_ROOTS", "JARVIS_PROJECT_ROOTS", "project_roots"),
    )

    @field_validator("project_roots", mode="before")
    @classmethod
    def _roots(cls, value: object) -> list[Path]:
        return parse_roots(value)

    # The egress proxy (domain/egress.py): containers without a network reach their allowlisted hosts through it.
    egress_enabled: bool = Field(default=True, description="Run the egress proxy for projects without a network.")
    egress_dir: Path | None = Field(
        default=None,
        description="Directory of the proxy's per-project unix "
        "sockets; empty: <data_dir>/egress. Must be on the Docker engine's host.",
    )
    egress_port: int = Field(
        default=3128, ge=1, le=65535, description="Port of the egress bridge on 127.0.0.1 inside project containers."
    )
    egress_bridge_command: list[str] = Field(
        default_factory=lambda: list(DEFAULT_BRIDGE_COMMAND),
        description="The bridge run in a project container ({port} and {socket} are filled in); it needs socat "
        "in the image, as the agent image has.",
    )
    egress_internal_hosts: list[str] = Field(
        default_factory=list,
        description="Host names (JSON list) that may resolve to internal addresses "
        "(loopback, private, link-local, metadata); every other name resolving to one is refused, "
        "by the egress proxy and for a project's https:// or ssh:// source_url alike.",
    )
    egress_resolve: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Fixed answers (JSON object: name -> addresses) the proxy uses before "
        "DNS, like /etc/hosts; such names still need egress_internal_hosts to reach an internal address.",
    )

    @model_validator(mode="after")
    def _resolve(self) -> RuntimeSettings:
        self.data_dir = self.data_dir.expanduser().resolve()
        if not self.database_url:
            self.database_url = f"sqlite:///{self.data_dir / 'runtime.db'}"
        self.egress_dir = (self.egress_dir or self.data_dir / "egress").expanduser().resolve()
        self.egress_internal_hosts = check_names(self.egress_internal_hosts, "egress_internal_hosts")
        self.egress_resolve = {
            name: [str(ipaddress.ip_address(a)) for a in addresses]
            for name, addresses in zip(
                check_names(self.egress_resolve, "egress_resolve"), self.egress_resolve.values(), strict=True
            )
        }
        if not self.instance:
            self.instance = hashlib.sha256(self.database_url.encode()).hexdigest()[:12]
        # After the instance label: rotating the password must not change which containers are this runtime's.
        self.database_url = self.with_database_password(self.database_url)
        return self

    @property
    def egress_root(self) -> Path:
        assert self.egress_dir is not None  # set by _resolve
        return self.egress_dir

    @property
    def projects_dir(self) -> Path:
        return self.data_dir / "projects"
