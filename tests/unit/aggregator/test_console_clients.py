"""The console's client configs (aggregator/console/clients.py) are the registry's client formats' entries: the
aggregator cannot import the registry service, so this test holds the two tables to each other."""

from __future__ import annotations

import json

from jarvis.aggregator.console.clients import SHAPES, entry, snippets
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
