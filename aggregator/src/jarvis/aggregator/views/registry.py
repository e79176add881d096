"""Views of the registry's objects, as agents read them (field names and order are the public contract)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

# How an agent names a server's transport (`jarvis_server action=create type=...`).
TransportName = Literal["stdio", "streamable-http", "container"]
# `LaunchView.transport`: the registry's names for them.
TRANSPORT_STREAMABLE_HTTP = "TRANSPORT_STREAMABLE_HTTP"
TRANSPORT_CONTAINER = "TRANSPORT_CONTAINER"


@dataclass(frozen=True)
class ProfileView:
    name: str
    description: str
    servers: list[str]
    created_at: str | None = None  # RFC 3339; absent when the registry has none
    updated_at: str | None = None


@dataclass(frozen=True)
class ProfileDeleted:
    name: str
    removed_from_clients: list[str]


@dataclass(frozen=True)
class ProfileSuggestion:
    name: str
    servers: list[str]
    reasons: list[str]
    exists: bool


@dataclass(frozen=True)
class ProfileSuggestions:
    suggestions: list[ProfileSuggestion]
    detected: list[str]
    clients_detected: list[str]


# Servers


@dataclass(frozen=True)
class LaunchView:
    transport: str  # the protobuf enum's name, e.g. TRANSPORT_STDIO
    command: str
    args: list[str]
    env: dict[str, str]
    cwd: str
    url: str
    headers: dict[str, str]
    image: str


@dataclass(frozen=True)
class ToolSummaryView:
    name: str
    description: str
    input_schema: dict[str, Any]  # the tool's own JSON Schema: free-form by nature


@dataclass(frozen=True)
class ServerView:
    name: str
    description: str
    launch: LaunchView | None
    catalog_name: str
    profiles: list[str]
    tools: list[ToolSummaryView]
    status: str
    last_error: str
    created_at: str | None = None
    updated_at: str | None = None


@dataclass(frozen=True)
class ServerInstalled:
    server: ServerView
    note: str  # what the install chose, e.g. the directories a filesystem server serves; "" for nothing


@dataclass(frozen=True)
class CatalogEntryView:
    """A catalog entry as discovery indexes it: what it is, whether it is installed, the tools it declares."""

    name: str
    title: str
    description: str
    category: str
    required_env: list[str]
    tools: list[ToolSummaryView]
    installed: bool


@dataclass(frozen=True)
class CatalogImported:
    imported: int
    updated: int
    skipped: list[str]  # why each skipped entry was skipped
    format: str  # the format read: server.json or livemcpbench


@dataclass(frozen=True)
class ServerUninstalled:
    name: str
    removed_from_profiles: list[str]
    removed_from_clients: list[str]


@dataclass(frozen=True)
class SearchHitView:
    name: str
    description: str
    installed: bool
    score: float
    matched_tools: list[str]


@dataclass(frozen=True)
class UsageStatView:
    tool: str
    action: str
    calls: int
    errors: int
    avg_latency_ms: float
    max_latency_ms: float
    last_called_at: str | None = None


@dataclass(frozen=True)
class UsageBucketView:
    """Calls in one time bucket to one tool, action and target; latencies as jarvis.common.latency_bins counts."""

    start: str
    tool: str
    action: str
    target: str
    calls: int
    errors: int
    latency_bins: dict[int, int]


@dataclass(frozen=True)
class AuditEntryView:
    id: int
    tool: str
    action: str
    ok: bool
    latency_ms: float
    at: str | None
    token_id: str
    token_name: str
    surface: str
    target: str
    outcome: str
    arguments: dict[str, Any]  # the call's redacted arguments (see jarvis.aggregator.audit)


# Clients


@dataclass(frozen=True)
class ClientEntryView:
    name: str
    kind: str
    managed: bool


@dataclass(frozen=True)
class ClientView:
    name: str
    display_name: str
    config_path: str
    detected: bool
    config_exists: bool
    custom_path: bool
    entries: list[ClientEntryView]
    error: str
    http_entries: bool


@dataclass(frozen=True)
class ClientEdited:
    client: ClientView | None
    backup_path: str
    added: list[str]
    removed: list[str]
    notes: list[str] = field(default_factory=list)  # what the user must still do (trust a folder in Gemini CLI)


@dataclass(frozen=True)
class ClientImported:
    imported: list[str]
    skipped: list[str]


@dataclass(frozen=True)
class ClientConfigPath:
    name: str
    path: str
    custom: bool
    exists: bool


# Config


@dataclass(frozen=True)
class ConfigEntryView:
    key: str
    value: Any  # any JSON value; no config key admits null, which this view would leave out
    default: bool
    description: str


@dataclass(frozen=True)
class ConfigListing:
    version: int
    path: str
    config: list[ConfigEntryView]


@dataclass(frozen=True)
class ConfigMigrated:
    from_version: int
    to_version: int
    backup_path: str
    changes: list[str]


# Tokens


@dataclass(frozen=True)
class TokenView:
    """A token as listed: never its secret, which only creation shows, once."""

    id: str
    name: str
    prefix: str
    scopes: list[str]
    created_at: str | None = None  # RFC 3339
    expires_at: str | None = None
    revoked_at: str | None = None
    last_used_at: str | None = None
    owner: str = ""  # the person it acts for (their subject); "" for a machine's token


@dataclass(frozen=True)
class TokenCreated:
    token: TokenView
    secret: str


# Operations


# Doctor checks whose failure is a warning, not ill health: Jarvis works, but something should be fixed (the
# registry's `data_dir`: its data dir or databases are readable by other users; the detail names the chmod).
ADVISORY_DOCTOR_CHECKS = frozenset({"data_dir"})


@dataclass(frozen=True)
class DoctorCheckView:
    name: str
    ok: bool
    detail: str


# Projects


@dataclass(frozen=True)
class ProjectAnalysis:
    path: str
    languages: list[str]
    frameworks: list[str]
    package_managers: list[str]
    configs: list[str]
    test_frameworks: list[str]
    is_git_repo: bool
    git_branch: str
    file_counts: dict[str, int]


@dataclass(frozen=True)
class ProjectDiff:
    branch: str
    status: str
    diff: str
    truncated: bool
    files: list[str]


@dataclass(frozen=True)
class DevopsApplied:
    stack: str
    written: list[str]
    skipped: list[str]


# Tool pins


@dataclass(frozen=True)
class ToolPinView:
    server: str
    tool: str
    state: str
    pinned_sha256: str
    seen_sha256: str
    pinned_json: str
    seen_json: str
    pinned_at: str | None = None
    changed_at: str | None = None


# Usage


@dataclass(frozen=True)
class UsageEventRecord:
    """One tool call (or counter) to record; the audit fields stay empty for plain counters."""

    tool: str
    action: str
    ok: bool
    latency_ms: float
    at_ns: int  # when, in nanoseconds since the epoch
    token_id: str = ""
    token_name: str = ""
    surface: str = ""
    target: str = ""
    outcome: str = ""
    arguments_json: str = ""
