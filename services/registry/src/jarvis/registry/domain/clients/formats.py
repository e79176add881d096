"""The known MCP clients: where their config lives and how one server entry looks in each."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

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


Syntax = Literal["json", "jsonc", "toml", "yaml"]
# The URL keys any client uses, for reading entries another tool wrote.
_URL_KEYS = ("url", "serverUrl", "httpUrl", "uri")


@dataclass(frozen=True)
class EntryShape:
    """How one server entry is spelled in a client's file: its key names and type markers."""

    url_key: str | None = "url"  # None: the file supports stdio entries only
    stdio_type: str | None = None  # the "type" value of a stdio entry; None: no type key
    http_type: str | None = None  # the "type" value of a streamable-HTTP entry; None: no type key
    command_key: str = "command"
    args_key: str | None = "args"  # None: the command key holds [command, *args] (OpenCode)
    env_key: str = "env"
    headers_key: tuple[str, ...] = ("headers",)  # a path: Continue nests it under requestOptions
    name_key: str | None = None  # the entry repeats its own name under this key (Goose, Continue)
    extra: tuple[tuple[str, Any], ...] = ()  # fixed fields every entry Jarvis writes carries


@dataclass(frozen=True)
class ClientFormat:
    name: str
    display_name: str
    servers_key: str  # top-level key holding {entry name: entry} (or a list of named entries)
    syntax: Syntax
    app_dir: Callable[[Path, str], Path]
    config_file: Callable[[Path, str], Path]
    shape: EntryShape = EntryShape()
    suffixes: tuple[str, ...] = (".json",)  # what a config file of this format may be called (paths.py)
    servers_list: bool = False  # the servers are a list of entries named by shape.name_key (Continue)
    top_defaults: tuple[tuple[str, Any], ...] = ()  # top-level keys the file's schema requires, added when missing
    note: str = ""  # what the user must still do once Jarvis wrote the file

    @property
    def jsonc(self) -> bool:
        return self.syntax == "jsonc"

    @property
    def url_key(self) -> str | None:
        return self.shape.url_key

    def encode(self, server: ServerLaunch) -> dict[str, Any]:
        """The entry this client expects for `server` (already validated)."""
        shape = self.shape
        entry: dict[str, Any] = {}
        if shape.name_key is not None:
            entry[shape.name_key] = server.name
        if server.transport == "stdio":
            if shape.stdio_type is not None:
                entry["type"] = shape.stdio_type
            if shape.args_key is None:
                entry[shape.command_key] = [server.command, *server.args]
            else:
                entry[shape.command_key] = server.command
                entry[shape.args_key] = list(server.args)
            if server.env:
                entry[shape.env_key] = dict(server.env)
        else:
            if shape.url_key is None:
                raise InvalidArgument(
                    f"{self.display_name}'s config file supports only stdio servers; "
                    f"{server.name!r} is a streamable-http server"
                )
            if shape.http_type is not None:
                entry["type"] = shape.http_type
            entry[shape.url_key] = server.url
            if server.headers:
                _put_path(entry, shape.headers_key, dict(server.headers))
        entry.update(dict(shape.extra))
        return entry

    def entry_url(self, raw: dict[str, Any]) -> str | None:
        for key in (self.shape.url_key, *_URL_KEYS):
            if key is not None and isinstance(raw.get(key), str):
                return str(raw[key])
        return None

    def carries_credential(self, raw: dict[str, Any]) -> bool:
        """Whether an entry sends Jarvis a credential: an Authorization header (or Codex's bearer_token_env_var) for
        an HTTP entry, JARVIS_TOKEN for a spawned `jarvis mcp` (the bearer its relay sends)."""
        if self.shape.command_key in raw or "command" in raw:
            env = raw.get(self.shape.env_key, raw.get("env"))
            return isinstance(env, dict) and bool(env.get("JARVIS_TOKEN"))
        if isinstance(raw.get("bearer_token_env_var"), str) and raw["bearer_token_env_var"]:
            return True
        for headers in (_get_path(raw, self.shape.headers_key), raw.get("headers")):
            if isinstance(headers, dict) and any(
                isinstance(k, str) and k.lower() == "authorization" and v for k, v in headers.items()
            ):
                return True
        return False

    def decode(self, name: str, raw: object) -> ServerLaunch | str:
        """The launch config of an existing entry, or why it cannot be imported."""
        if not isinstance(raw, dict):
            return "the entry is not an object"
        if raw.get("disabled") is True or raw.get("enabled") is False:
            return "the entry is disabled in the client"
        unsupported = [key for key in _UNSUPPORTED_FIELDS if key in raw]
        if unsupported:
            return f"the entry uses {', '.join(unsupported)}, which a Jarvis launch config cannot express"
        if _mentions_input_variable(raw):
            return "the entry uses ${input:…} variables, which only VS Code can resolve"
        shape = self.shape
        kind = raw.get("type")
        url = self.entry_url(raw)
        server: ServerLaunch
        command_key = shape.command_key if shape.command_key in raw else "command"
        if command_key in raw:
            if kind not in (None, "stdio", shape.stdio_type):
                return f"the entry has a command but type {kind!r}"
            command, args = raw[command_key], raw.get(shape.args_key or "args", [])
            if isinstance(command, list) and command and shape.args_key is None:
                command, args = command[0], command[1:]
            env: Any = raw.get(shape.env_key, raw.get("env", {}))
            if not isinstance(command, str):
                return "command is not a string"
            if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
                return "args is not a list of strings"
            if not _is_string_map(env):
                return "env is not an object of strings"
            server = ServerLaunch(name, "stdio", command=command, args=args, env=env)
        elif url is not None:
            if kind == "sse" or (kind is None and urlsplit(url).path.rstrip("/").endswith("/sse")):
                return "the entry uses the SSE transport; Jarvis speaks streamable HTTP only"
            if kind not in (None, *_HTTP_TYPES, shape.http_type):
                return f"unknown entry type {kind!r}"
            headers = _get_path(raw, shape.headers_key)
            headers = raw.get("headers", {}) if headers is None else headers
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
        command, args = raw.get(self.shape.command_key, raw.get("command")), raw.get("args")
        if isinstance(command, list) and command and self.shape.args_key is None:
            command, args = command[0], command[1:]
        if isinstance(command, str) and isinstance(args, list) and "mcp" in args:
            stem = os.path.basename(command.replace("\\", "/")).lower().removesuffix(".exe")
            if stem == "jarvis":
                for flag, value in itertools.pairwise(args):
                    if flag == "--surface" and isinstance(value, str) and value.startswith(PROFILE_SURFACE_PREFIX):
                        return "profile", value[len(PROFILE_SURFACE_PREFIX) :]
                return "jarvis", None
        return "server", None


@dataclass(frozen=True)
class Access:
    """How an entry Jarvis writes reaches this instance: its URL, its token, its own command."""

    aggregator_url: str
    jarvis_command: str = "jarvis"
    data_dir: str = ""  # passed as --data-dir to a stdio entry; empty: the command's default
    authorization: str = ""  # the Authorization header value of HTTP entries; empty: none needed


_HTTP_TYPES = ("http", "streamable-http", "streamableHttp", "streamable_http", "remote")


def _put_path(entry: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        entry = entry.setdefault(key, {})
    entry[path[-1]] = value


def _get_path(entry: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = entry
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


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


def _vscode_storage(home: Path, platform: str, extension: str) -> Path:
    """Where a VS Code extension (Cline, Roo Code) keeps its global settings."""
    return _user_config_dir(home, platform) / "Code" / "User" / "globalStorage" / extension


def _goose_dir(home: Path, platform: str) -> Path:
    if platform.startswith(("win", "cygwin")):
        return home / "AppData" / "Roaming" / "Block" / "goose" / "config"
    return home / ".config" / "goose"


# Each format as its client documents it (URL in the comment); the unit tests hold a sample of each.
CLIENTS: tuple[ClientFormat, ...] = (
    # https://modelcontextprotocol.io/quickstart/user : stdio entries only in the file.
    ClientFormat(
        name="claude-desktop",
        display_name="Claude Desktop",
        servers_key="mcpServers",
        syntax="json",
        shape=EntryShape(url_key=None),
        app_dir=lambda home, platform: _user_config_dir(home, platform) / "Claude",
        config_file=lambda home, platform: _user_config_dir(home, platform) / "Claude" / "claude_desktop_config.json",
    ),
    # https://docs.anthropic.com/en/docs/claude-code/mcp : user scope; project scopes live under
    # "projects" and are left alone.
    ClientFormat(
        name="claude-code",
        display_name="Claude Code",
        servers_key="mcpServers",
        syntax="json",
        shape=EntryShape(stdio_type="stdio", http_type="http"),
        app_dir=lambda home, platform: home / ".claude",
        config_file=lambda home, platform: home / ".claude.json",
    ),
    # https://docs.cursor.com/context/model-context-protocol
    ClientFormat(
        name="cursor",
        display_name="Cursor",
        servers_key="mcpServers",
        syntax="json",
        app_dir=lambda home, platform: home / ".cursor",
        config_file=lambda home, platform: home / ".cursor" / "mcp.json",
    ),
    # https://code.visualstudio.com/docs/copilot/chat/mcp-servers : the user file; a workspace's
    # .vscode/mcp.json has the same format (edit with path=<workspace>/.vscode/mcp.json).
    ClientFormat(
        name="vscode",
        display_name="Visual Studio Code",
        servers_key="servers",
        syntax="jsonc",
        shape=EntryShape(stdio_type="stdio", http_type="http"),
        app_dir=lambda home, platform: _user_config_dir(home, platform) / "Code",
        config_file=lambda home, platform: _user_config_dir(home, platform) / "Code" / "User" / "mcp.json",
    ),
    # https://docs.windsurf.com/windsurf/cascade/mcp
    ClientFormat(
        name="windsurf",
        display_name="Windsurf",
        servers_key="mcpServers",
        syntax="json",
        shape=EntryShape(url_key="serverUrl"),
        app_dir=lambda home, platform: home / ".codeium" / "windsurf",
        config_file=lambda home, platform: home / ".codeium" / "windsurf" / "mcp_config.json",
    ),
    # https://developers.openai.com/codex/mcp : [mcp_servers.NAME] tables; literal headers go in
    # http_headers (a "headers" key is ignored by Codex).
    ClientFormat(
        name="codex",
        display_name="Codex CLI",
        servers_key="mcp_servers",
        syntax="toml",
        shape=EntryShape(headers_key=("http_headers",)),
        suffixes=(".toml",),
        app_dir=lambda home, platform: home / ".codex",
        config_file=lambda home, platform: home / ".codex" / "config.toml",
    ),
    # https://github.com/google-gemini/gemini-cli/blob/main/docs/tools/mcp-server.md : httpUrl is
    # streamable HTTP (url would mean SSE).
    ClientFormat(
        name="gemini",
        display_name="Gemini CLI",
        servers_key="mcpServers",
        syntax="json",
        shape=EntryShape(url_key="httpUrl"),
        note=(
            "Gemini CLI connects MCP servers only in folders you trust, and ignores them elsewhere (`gemini mcp "
            "list` shows them Disabled): start `gemini` in your project folder and trust it when asked, or later "
            "with /permissions"
        ),
        app_dir=lambda home, platform: home / ".gemini",
        config_file=lambda home, platform: home / ".gemini" / "settings.json",
    ),
    # https://block.github.io/goose/docs/guides/config-files : extensions keyed by id, each with
    # its name, type stdio (cmd/args/envs) or streamable_http (uri/headers), enabled and timeout.
    ClientFormat(
        name="goose",
        display_name="Goose",
        servers_key="extensions",
        syntax="yaml",
        shape=EntryShape(
            url_key="uri",
            stdio_type="stdio",
            http_type="streamable_http",
            command_key="cmd",
            env_key="envs",
            name_key="name",
            extra=(("enabled", True), ("timeout", 300)),
        ),
        suffixes=(".yaml", ".yml"),
        app_dir=_goose_dir,
        config_file=lambda home, platform: _goose_dir(home, platform) / "config.yaml",
    ),
    # https://docs.continue.dev/customize/deep-dives/mcp : mcpServers is a list of named entries;
    # HTTP headers go under requestOptions. Its schema requires a config's name, version and schema.
    ClientFormat(
        name="continue",
        display_name="Continue",
        servers_key="mcpServers",
        syntax="yaml",
        shape=EntryShape(http_type="streamable-http", headers_key=("requestOptions", "headers"), name_key="name"),
        suffixes=(".yaml", ".yml"),
        servers_list=True,
        top_defaults=(("name", "Local Assistant"), ("version", "1.0.0"), ("schema", "v1")),
        app_dir=lambda home, platform: home / ".continue",
        config_file=lambda home, platform: home / ".continue" / "config.yaml",
    ),
    # https://docs.cline.bot/mcp/configuring-mcp-servers
    ClientFormat(
        name="cline",
        display_name="Cline",
        servers_key="mcpServers",
        syntax="json",
        shape=EntryShape(http_type="streamableHttp"),
        app_dir=lambda home, platform: _vscode_storage(home, platform, "saoudrizwan.claude-dev"),
        config_file=lambda home, platform: (
            _vscode_storage(home, platform, "saoudrizwan.claude-dev") / "settings" / "cline_mcp_settings.json"
        ),
    ),
    # https://docs.roocode.com/features/mcp/using-mcp-in-roo
    ClientFormat(
        name="roo-code",
        display_name="Roo Code",
        servers_key="mcpServers",
        syntax="json",
        shape=EntryShape(http_type="streamable-http"),
        app_dir=lambda home, platform: _vscode_storage(home, platform, "rooveterinaryinc.roo-cline"),
        config_file=lambda home, platform: (
            _vscode_storage(home, platform, "rooveterinaryinc.roo-cline") / "settings" / "mcp_settings.json"
        ),
    ),
    # https://opencode.ai/docs/mcp-servers : "mcp" entries of type local (command is the argv) or remote.
    ClientFormat(
        name="opencode",
        display_name="OpenCode",
        servers_key="mcp",
        syntax="jsonc",
        shape=EntryShape(
            stdio_type="local", http_type="remote", args_key=None, env_key="environment", extra=(("enabled", True),)
        ),
        suffixes=(".json", ".jsonc"),
        app_dir=lambda home, platform: home / ".config" / "opencode",
        config_file=lambda home, platform: home / ".config" / "opencode" / "opencode.json",
    ),
    # https://zed.dev/docs/ai/mcp : "context_servers" in settings.json (comments allowed).
    ClientFormat(
        name="zed",
        display_name="Zed",
        servers_key="context_servers",
        syntax="jsonc",
        app_dir=lambda home, platform: home / ".config" / "zed",
        config_file=lambda home, platform: home / ".config" / "zed" / "settings.json",
    ),
)
CLIENTS_BY_NAME: dict[str, ClientFormat] = {client.name: client for client in CLIENTS}
