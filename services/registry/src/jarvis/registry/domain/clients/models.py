"""Value types of the client-config domain, and validation of the names that become config keys."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

from jarvis.common.errors import InvalidArgument

Transport = Literal["stdio", "streamable-http"]
EntryKind = Literal["server", "profile", "jarvis"]
TRANSPORTS: tuple[Transport, ...] = ("stdio", "streamable-http")
MAX_NAME_LENGTH = 128


@dataclass(frozen=True)
class ServerLaunch:
    """How a client starts or reaches one MCP server.

    `env` and `headers` usually hold secrets: they are kept out of `repr` so they never reach a log.
    """

    name: str
    transport: Transport = "stdio"
    command: str = ""
    args: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        # Callers pass lists and dicts; freeze copies so a shared value cannot change under us.
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "env", dict(self.env))
        object.__setattr__(self, "headers", dict(self.headers))


@dataclass(frozen=True)
class ConfigEntry:
    """One entry of a client's server map, as Jarvis sees it."""

    name: str
    kind: EntryKind
    managed: bool
    profile: str | None = None


@dataclass(frozen=True)
class ClientStatus:
    name: str
    display_name: str
    config_path: str
    detected: bool
    config_exists: bool
    custom_path: bool
    entries: list[ConfigEntry] = field(default_factory=list)
    error: str | None = None
    http_entries: bool = True  # profiles are written as URLs; False: as a spawned `jarvis mcp`


@dataclass(frozen=True)
class EditResult:
    client: str
    config_path: str
    backup_path: str | None
    added: list[str]
    removed: list[str]
    notes: list[str] = field(default_factory=list)  # what the user must still do (trust a folder in Gemini CLI)


@dataclass(frozen=True)
class SkippedEntry:
    name: str
    reason: str


@dataclass(frozen=True)
class ImportResult:
    client: str
    config_path: str
    servers: list[ServerLaunch]
    skipped: list[SkippedEntry]


@dataclass(frozen=True)
class Refresh:
    """Entries Jarvis wrote into one client's file that reach Jarvis with no credential, which a Jarvis requiring one
    refuses: `adds` are their names as `jarvis client edit --add` takes them (writing them again gives them one);
    `path` is set when the file is not the one the client's edits go to by default."""

    client: str
    config_path: str
    adds: list[str]
    path: str | None = None


@dataclass(frozen=True)
class PathInfo:
    client: str
    path: str
    default_path: str
    custom: bool
    exists: bool


def name_problem(name: object) -> str | None:
    """Why `name` cannot be an entry name in a client config, or None when it can."""
    if not isinstance(name, str) or not name:
        return "must be a non-empty string"
    if len(name) > MAX_NAME_LENGTH:
        return f"is longer than {MAX_NAME_LENGTH} characters"
    if name != name.strip():
        return "has leading or trailing whitespace"
    if name in {".", ".."} or "/" in name or "\\" in name:
        return "contains a path separator or is a relative path component"
    if any(unicodedata.category(ch) in {"Cc", "Cf", "Zl", "Zp"} for ch in name):
        return "contains control characters"
    return None


def validate_name(name: str, what: str) -> None:
    problem = name_problem(name)
    if problem is not None:
        raise InvalidArgument(f"{what} name {name!r} {problem}")


def validate_launch(server: ServerLaunch) -> None:
    """Reject a launch config no client could use. Messages name fields, never their values."""
    validate_name(server.name, "server")
    label = f"server {server.name!r}"
    if server.transport not in TRANSPORTS:
        raise InvalidArgument(
            f"{label}: transport {server.transport!r} is not supported; use one of {', '.join(TRANSPORTS)}"
        )
    if server.transport == "stdio":
        if not isinstance(server.command, str) or not server.command.strip():
            raise InvalidArgument(f"{label}: a stdio server needs a command")
        if not all(isinstance(a, str) for a in server.args):
            raise InvalidArgument(f"{label}: every argument must be a string")
        _check_string_map(server.env, f"{label}: env")
    else:
        parts = urlsplit(server.url) if isinstance(server.url, str) else None
        if parts is None or parts.scheme not in {"http", "https"} or not parts.netloc:
            raise InvalidArgument(f"{label}: a streamable-http server needs an http(s) URL")
        _check_string_map(server.headers, f"{label}: headers")
        for header in server.headers:
            if not header or any(ch in header for ch in ":\r\n ") or not header.isascii():
                raise InvalidArgument(f"{label}: {header!r} is not a valid HTTP header name")
        if any("\r" in v or "\n" in v for v in server.headers.values()):
            raise InvalidArgument(f"{label}: header values must not contain line breaks")


def _check_string_map(values: Mapping[str, str], label: str) -> None:
    for key, value in values.items():
        if not isinstance(key, str) or not key or not isinstance(value, str):
            raise InvalidArgument(f"{label} must map non-empty strings to strings")
