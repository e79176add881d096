"""The config each MCP client takes for one Jarvis surface: the entry shapes of the registry's client formats
(services/registry/.../clients/formats.py, which `jarvis client edit` writes with), for a streamable-HTTP URL.

The registry's table is its own service's; tests/unit/aggregator/test_console_clients.py holds this one to it.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True)
class ClientShape:
    name: str  # the registry's format name
    display_name: str
    servers_key: str
    url_key: str = "url"
    http_type: str | None = None  # the entry's "type" for a streamable-HTTP server
    extra: tuple[tuple[str, object], ...] = ()
    where: str = ""  # the file to put it in


SHAPES = (
    ClientShape("claude-code", "Claude Code", "mcpServers", http_type="http", where=".mcp.json in your project"),
    ClientShape("cursor", "Cursor", "mcpServers", where="~/.cursor/mcp.json"),
    ClientShape("vscode", "Visual Studio Code", "servers", http_type="http", where=".vscode/mcp.json"),
    ClientShape("windsurf", "Windsurf", "mcpServers", url_key="serverUrl", where="~/.codeium/windsurf/mcp_config.json"),
    ClientShape("gemini", "Gemini CLI", "mcpServers", url_key="httpUrl", where="~/.gemini/settings.json"),
    ClientShape(
        "opencode",
        "OpenCode",
        "mcp",
        http_type="remote",
        extra=(("enabled", True),),
        where="~/.config/opencode/opencode.json",
    ),
)


@dataclass(frozen=True)
class Snippet:
    client: str
    where: str
    text: str


def entry(shape: ClientShape, url: str, token: str | None) -> dict[str, object]:
    body: dict[str, object] = {}
    if shape.http_type is not None:
        body["type"] = shape.http_type
    body[shape.url_key] = url
    if token:
        body["headers"] = {"Authorization": f"Bearer {token}"}
    body.update(dict(shape.extra))
    return body


def snippets(name: str, url: str, token: str | None = None) -> list[Snippet]:
    """The config for surface `name` at `url` in each client; `token` (a placeholder) where a token is needed."""
    answer = []
    header = f' --header "Authorization: Bearer {token}"' if token else ""
    answer.append(
        Snippet("Claude Code (command)", "a terminal", f"claude mcp add --transport http {name} {url}{header}")
    )
    for shape in SHAPES:
        document = {shape.servers_key: {name: entry(shape, url, token)}}
        answer.append(Snippet(shape.display_name, shape.where, json.dumps(document, indent=2)))
    codex_headers = f'\nhttp_headers = {{ Authorization = "Bearer {token}" }}' if token else ""
    answer.append(Snippet("Codex CLI", "~/.codex/config.toml", f'[mcp_servers.{name}]\nurl = "{url}"{codex_headers}'))
    # Claude Desktop's file takes only servers it spawns: Jarvis's CLI on the person's machine relays to this one.
    desktop: dict[str, object] = {"command": "jarvis", "args": ["mcp", "--url", url]}
    if token:
        desktop["env"] = {"JARVIS_TOKEN": token}
    where = "claude_desktop_config.json, with Jarvis installed (`jarvis` on PATH)"
    answer.append(Snippet("Claude Desktop", where, json.dumps({"mcpServers": {name: desktop}}, indent=2)))
    return answer


@dataclass(frozen=True)
class InstallLink:
    client: str
    href: str


def install_links(name: str, url: str) -> list[InstallLink]:
    """One-click installs, where a client has them (its documented deep links): VS Code takes the entry with its
    name, URL-encoded JSON; Cursor the entry as base64 JSON. Only for a surface that needs no token pasted in."""
    vscode = json.dumps({"name": name, **entry(_SHAPE["vscode"], url, None)}, separators=(",", ":"))
    cursor = base64.b64encode(json.dumps(entry(_SHAPE["cursor"], url, None)).encode()).decode()
    return [
        InstallLink("Visual Studio Code", "vscode:mcp/install?" + quote(vscode, safe="")),
        InstallLink(
            "Cursor", f"cursor://anysphere.cursor-deeplink/mcp/install?name={quote(name)}&config={quote(cursor)}"
        ),
    ]


_SHAPE = {shape.name: shape for shape in SHAPES}
