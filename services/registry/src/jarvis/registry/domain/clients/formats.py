"""The known MCP clients: where their config lives and how one server entry looks in each."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from jarvis.common.errors import InvalidArgument

from .models import EntryKind, ServerLaunch, validate_launch

PROFILE_ENTRY_PREFIX = "jarvis-"
PROFILE_SURFACE_PREFIX = "profile/"
# Entry fields a Jarvis launch config cannot carry; importing without them would break the server.
_UNSUPPORTED_FIELDS = ("cwd", "envFile")


def _user_config_dir(home: Path, platform: str) -> Path:
    """Where desktop apps keep per-user data: Application Support, %APPDATA% or ~/.config."""
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform.startswith(("win", "cygwin")):
        return home / "AppData" / "Roaming"
    return home / ".config"


@dataclass(frozen=True)
class ClientFormat:
    name: str
    display_name: str
    servers_key: str  # top-level key holding {entry name: entry}
    url_key: str | None  # key of a remote server's URL; None: the file supports stdio entries only
    typed: bool  # entries carry "type": "stdio" | "http"
    jsonc: bool  # comments and trailing commas are legal in the file
    app_dir: Callable[[Path, str], Path]
    config_file: Callable[[Path, str], Path]
    suffixes: tuple[str, ...] = (".json",)  # what a config file of this format may be called (paths.py)

    def encode(self, server: ServerLaunch) -> dict[str, Any]:
        """The entry this client expects for `server` (already validated)."""
        entry: dict[str, Any] = {}
        if server.transport == "stdio":
            if self.typed:
                entry["type"] = "stdio"
            entry["command"] = server.command
            entry["args"] = list(server.args)
            if server.env:
                entry["env"] = dict(server.env)
            return entry
        if self.url_key is None:
            raise InvalidArgument(
                f"{self.display_name}'s config file supports only stdio servers; "
                f"{server.name!r} is a streamable-http server"
            )
        if self.typed:
            entry["type"] = "http"
        entry[self.url_key] = server.url
        if server.headers:
            entry["headers"] = dict(server.headers)
        return entry

    def entry_url(self, raw: dict[str, Any]) -> str | None:
        for key in (self.url_key, "url", "serverUrl"):
            if key is not None and isinstance(raw.get(key), str):
                return str(raw[key])
        return None

    def profile_launch(self, profile: str, aggregator_url: str, jarvis_command: str) -> ServerLaunch:
        """The entry that connects this client to a Jarvis profile surface."""
        name = PROFILE_ENTRY_PREFIX + profile
        if self.url_key is None:
            args = ("mcp", "--surface", PROFILE_SURFACE_PREFIX + profile)
            return ServerLaunch(name=name, transport="stdio", command=jarvis_command, args=args)
        url = f"{aggregator_url}/mcp/{PROFILE_SURFACE_PREFIX}{quote(profile, safe='')}"
        return ServerLaunch(name=name, transport="streamable-http", url=url)

    def decode(self, name: str, raw: object) -> ServerLaunch | str:
        """The launch config of an existing entry, or why it cannot be imported."""
        if not isinstance(raw, dict):
            return "the entry is not a JSON object"
        if raw.get("disabled") is True:
            return "the entry is disabled in the client"
        unsupported = [key for key in _UNSUPPORTED_FIELDS if key in raw]
        if unsupported:
            return f"the entry uses {', '.join(unsupported)}, which a Jarvis launch config cannot express"
        if _mentions_input_variable(raw):
            return "the entry uses ${input:…} variables, which only VS Code can resolve"
        kind = raw.get("type")
        url = self.entry_url(raw)
        server: ServerLaunch
        if "command" in raw:
            if kind not in (None, "stdio"):
                return f"the entry has a command but type {kind!r}"
            args, env = raw.get("args", []), raw.get("env", {})
            if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
                return "args is not a list of strings"
            if not _is_string_map(env):
                return "env is not an object of strings"
            server = ServerLaunch(name, "stdio", command=raw["command"], args=args, env=env)
        elif url is not None:
            if kind == "sse" or (kind is None and urlsplit(url).path.rstrip("/").endswith("/sse")):
                return "the entry uses the SSE transport; Jarvis speaks streamable HTTP only"
            if kind not in (None, "http", "streamable-http", "streamableHttp"):
                return f"unknown entry type {kind!r}"
            headers = raw.get("headers", {})
            if not _is_string_map(headers):
                return "headers is not an object of strings"
            server = ServerLaunch(name, "streamable-http", url=url, headers=headers)
        else:
            return "the entry has neither a command nor a URL"
        try:
            validate_launch(server)
        except InvalidArgument as exc:
            return exc.message
        return server

    def classify(self, raw: object, aggregator_url: str) -> tuple[EntryKind, str | None]:
        """Whether an entry points at Jarvis itself, at one of its profiles, or elsewhere."""
        if not isinstance(raw, dict):
            return "server", None
        url = self.entry_url(raw)
        if url is not None:
            base = aggregator_url.rstrip("/")
            if url.rstrip("/") == base or url.startswith(base + "/"):
                tail = url[len(base) :].strip("/")
                prefix = "mcp/" + PROFILE_SURFACE_PREFIX
                if tail.startswith(prefix) and "/" not in tail[len(prefix) :]:
                    return "profile", unquote(tail[len(prefix) :])
                return "jarvis", None
            return "server", None
        command, args = raw.get("command"), raw.get("args")
        if isinstance(command, str) and isinstance(args, list) and args[:1] == ["mcp"]:
            stem = os.path.basename(command.replace("\\", "/")).lower().removesuffix(".exe")
            if stem == "jarvis":
                for flag, value in itertools.pairwise(args):
                    if flag == "--surface" and isinstance(value, str) and value.startswith(PROFILE_SURFACE_PREFIX):
                        return "profile", value[len(PROFILE_SURFACE_PREFIX) :]
                return "jarvis", None
        return "server", None


def _is_string_map(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def _mentions_input_variable(value: object) -> bool:
    if isinstance(value, str):
        return "${input:" in value
    if isinstance(value, dict):
        return any(_mentions_input_variable(v) for v in value.values())
    if isinstance(value, list):
        return any(_mentions_input_variable(v) for v in value)
    return False


CLIENTS: tuple[ClientFormat, ...] = (
    ClientFormat(
        name="claude-desktop",
        display_name="Claude Desktop",
        servers_key="mcpServers",
        url_key=None,
        typed=False,
        jsonc=False,
        app_dir=lambda home, platform: _user_config_dir(home, platform) / "Claude",
        config_file=lambda home, platform: _user_config_dir(home, platform) / "Claude" / "claude_desktop_config.json",
    ),
    ClientFormat(
        name="claude-code",
        display_name="Claude Code",
        servers_key="mcpServers",  # user scope; project scopes live under "projects" and are left alone
        url_key="url",
        typed=True,
        jsonc=False,
        app_dir=lambda home, platform: home / ".claude",
        config_file=lambda home, platform: home / ".claude.json",
    ),
    ClientFormat(
        name="cursor",
        display_name="Cursor",
        servers_key="mcpServers",
        url_key="url",
        typed=False,
        jsonc=False,
        app_dir=lambda home, platform: home / ".cursor",
        config_file=lambda home, platform: home / ".cursor" / "mcp.json",
    ),
    ClientFormat(
        name="vscode",
        display_name="Visual Studio Code",
        servers_key="servers",
        url_key="url",
        typed=True,
        jsonc=True,
        app_dir=lambda home, platform: _user_config_dir(home, platform) / "Code",
        config_file=lambda home, platform: _user_config_dir(home, platform) / "Code" / "User" / "mcp.json",
    ),
    ClientFormat(
        name="windsurf",
        display_name="Windsurf",
        servers_key="mcpServers",
        url_key="serverUrl",
        typed=False,
        jsonc=False,
        app_dir=lambda home, platform: home / ".codeium" / "windsurf",
        config_file=lambda home, platform: home / ".codeium" / "windsurf" / "mcp_config.json",
    ),
)
CLIENTS_BY_NAME: dict[str, ClientFormat] = {client.name: client for client in CLIENTS}
