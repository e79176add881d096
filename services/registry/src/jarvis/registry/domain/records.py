"""Plain values the domain hands out; callers never see ORM rows or sessions."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

TransportName = Literal["stdio", "streamable-http", "container"]
TRANSPORTS: tuple[TransportName, ...] = ("stdio", "streamable-http", "container")


@dataclass(frozen=True)
class Launch:
    """How to launch (stdio, container) or reach (streamable-http) a server."""

    transport: TransportName
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = ""
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    image: str = ""

    def to_json(self) -> dict[str, Any]:
        """Only the fields that are set, so stored templates stay readable."""
        data: dict[str, Any] = {"transport": self.transport}
        for key in ("command", "cwd", "url", "image"):
            if getattr(self, key):
                data[key] = getattr(self, key)
        for key in ("args", "env", "headers"):
            if getattr(self, key):
                data[key] = list(self.args) if key == "args" else dict(getattr(self, key))
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Launch:
        transport = data.get("transport", "stdio")
        if transport not in TRANSPORTS:
            raise ValueError(f"unknown transport {transport!r}; use one of {', '.join(TRANSPORTS)}")
        return cls(
            transport=transport,
            command=str(data.get("command", "")),
            args=tuple(str(a) for a in data.get("args", ())),
            env={str(k): str(v) for k, v in dict(data.get("env", {})).items()},
            cwd=str(data.get("cwd", "")),
            url=str(data.get("url", "")),
            headers={str(k): str(v) for k, v in dict(data.get("headers", {})).items()},
            image=str(data.get("image", "")),
        )


@dataclass(frozen=True)
class Tool:
    name: str
    description: str = ""
    input_schema: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.input_schema is not None:
            data["inputSchema"] = self.input_schema
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Tool:
        schema = data.get("inputSchema")
        return cls(
            name=str(data["name"]),
            description=str(data.get("description") or ""),
            input_schema=schema if isinstance(schema, dict) else None,
        )


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    launch: Launch
    title: str = ""
    description: str = ""
    category: str = ""
    source: str = "bundled"
    homepage: str = ""
    required_env: tuple[str, ...] = ()
    tools: tuple[Tool, ...] = ()
    installed: bool = False


@dataclass(frozen=True)
class Server:
    name: str
    description: str
    launch: Launch
    catalog_name: str
    profiles: tuple[str, ...]
    tools: tuple[Tool, ...]
    status: str
    last_error: str
    created_at: datetime
    updated_at: datetime
    note: str = ""  # set by an install only: what it chose, e.g. the directories a filesystem server serves


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    servers: tuple[str, ...]
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class Token:
    id: str
    name: str
    prefix: str
    scopes: tuple[str, ...]
    created_at: datetime
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None
    owner: str = ""  # the person it acts for; "" for a machine's token


@dataclass(frozen=True)
class UsageEvent:
    tool: str
    action: str
    ok: bool
    latency_ms: float
    at: datetime | None = None
    # Audit fields: an event with a surface is also an audit log entry (see domain/usage.py).
    token_id: str = ""
    token_name: str = ""
    surface: str = ""
    target: str = ""
    outcome: str = ""
    arguments_json: str = ""


@dataclass(frozen=True)
class AuditEntry:
    id: int
    event: UsageEvent


@dataclass(frozen=True)
class UsageBucket:
    """The audit log's calls in one time bucket to one tool, action and target, with their latencies' histogram
    (jarvis.common.latency_bins: bin -> calls)."""

    start: datetime
    tool: str
    action: str
    target: str
    calls: int
    errors: int
    latency_bins: dict[int, int]


@dataclass(frozen=True)
class UsageStat:
    tool: str
    action: str
    calls: int
    errors: int
    avg_latency_ms: float
    max_latency_ms: float
    last_called_at: datetime | None
