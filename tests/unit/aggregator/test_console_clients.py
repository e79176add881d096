"""The console's client configs (aggregator/console/clients.py) are the registry's client formats' entries: the
aggregator cannot import the registry service, so this test holds the two tables to each other."""

from __future__ import annotations

import base64
import json
from urllib.parse import parse_qs, unquote, urlsplit

from jarvis.aggregator.console.clients import SHAPES, entry, install_links, snippets
from jarvis.registry.domain.clients.formats import CLIENTS_BY_NAME


def test_each_shape_is_its_registry_formats() -> None:
    for shape in SHAPES:
        registry = CLIENTS_BY_NAME[shape.name]
        assert shape.display_name == registry.display_name
        assert shape.servers_key == registry.servers_key
        assert shape.url_key == registry.shape.url_key
        assert shape.http_type == registry.shape.http_type
        assert shape.extra == registry.shape.extra
        assert registry.shape.headers_key == ("headers",)


def test_a_snippet_is_a_whole_config_document() -> None:
    by_client = {s.client: s for s in snippets("jarvis", "http://127.0.0.1:8000/mcp/jarvis", "<your token>")}
    vscode = json.loads(by_client["Visual Studio Code"].text)
    assert vscode == {
        "servers": {
            "jarvis": {
                "type": "http",
                "url": "http://127.0.0.1:8000/mcp/jarvis",
                "headers": {"Authorization": "Bearer <your token>"},
            }
        }
    }
    assert by_client["Claude Code (command)"].text == (
        "claude mcp add --transport http jarvis http://127.0.0.1:8000/mcp/jarvis "
        '--header "Authorization: Bearer <your token>"'
    )
    codex = 'url = "http://127.0.0.1:8000/mcp/jarvis"'
    assert codex in by_client["Codex CLI"].text
    assert entry(SHAPES[1], "u", None) == {"url": "u"}  # Cursor: no type, no headers without a token
    assert CLIENTS_BY_NAME["codex"].shape.headers_key == ("http_headers",)


def test_install_links_are_the_clients_deep_links() -> None:
    """VS Code's `vscode:mcp/install?<URL-encoded JSON with the name>`, Cursor's `cursor://anysphere.cursor-deeplink/
    mcp/install?name=…&config=<base64 JSON of the entry>`, as each documents them."""
    vscode, cursor = install_links("jarvis", "http://127.0.0.1:8000/mcp/jarvis")
    assert vscode.href.startswith("vscode:mcp/install?")
    assert json.loads(unquote(vscode.href.removeprefix("vscode:mcp/install?"))) == {
        "name": "jarvis",
        "type": "http",
        "url": "http://127.0.0.1:8000/mcp/jarvis",
    }
    query = parse_qs(urlsplit(cursor.href).query)
    assert cursor.href.startswith("cursor://anysphere.cursor-deeplink/mcp/install?")
    assert query["name"] == ["jarvis"]
    assert json.loads(base64.b64decode(query["config"][0])) == {"url": "http://127.0.0.1:8000/mcp/jarvis"}


def test_claude_desktop_spawns_jarvis_which_relays_to_the_url() -> None:
    """Claude Desktop's file takes only servers it spawns: the entry runs `jarvis mcp --url` with the token in env."""
    by_client = {s.client: s for s in snippets("jarvis", "https://j.example/mcp/jarvis", "<your token>")}
    desktop = json.loads(by_client["Claude Desktop"].text)
    assert desktop == {
        "mcpServers": {
            "jarvis": {
                "command": "jarvis",
                "args": ["mcp", "--url", "https://j.example/mcp/jarvis"],
                "env": {"JARVIS_TOKEN": "<your token>"},
            }
        }
    }
    signs_in = json.loads(
        {s.client: s for s in snippets("jarvis", "https://j.example/mcp/jarvis")}["Claude Desktop"].text
    )
    assert "env" not in signs_in["mcpServers"]["jarvis"]
