"""Which entries Jarvis wrote reach it with no credential (issue 48 item 4): written while Jarvis ran open, they are
refused once it requires one, so `jarvis up --require-auth` names them. Real config files in a temporary home."""

from __future__ import annotations

import json
from pathlib import Path

from jarvis.registry.domain.clients import ClientManager, Refresh
from tests.unit.clients.clients_support import Install

TOKEN = "Bearer jv_x"
ADDS = ["time", "profile:core", "jarvis"]


def open_entries(manager: ClientManager, home: Path, *clients: str) -> None:
    """What `jarvis client edit <client> --add time --add profile:core --add jarvis` writes for an open Jarvis."""
    for client in clients:
        manager.edit(client, add_servers=["time"], add_profiles=["core"], add_surfaces=["jarvis"])


def test_entries_written_while_jarvis_ran_open_are_named_by_what_add_takes(
    manager: ClientManager, home: Path, install: Install
) -> None:
    install("claude-code")  # the user's own entries there carry no token either: not Jarvis's to name
    install("gemini")
    (home / ".config" / "Claude").mkdir(parents=True)
    open_entries(manager, home, "claude-code", "gemini", "claude-desktop")  # claude-desktop: `jarvis mcp` entries
    assert manager.refreshes(sign_in=False) == [
        Refresh("claude-desktop", str(home / ".config/Claude/claude_desktop_config.json"), ADDS),
        Refresh("claude-code", str(home / ".claude.json"), ADDS),
        Refresh("gemini", str(home / ".gemini/settings.json"), ADDS),
    ]


def test_where_jarvis_serves_sign_in_a_client_that_signs_in_needs_no_token(manager: ClientManager, home: Path) -> None:
    for folder in (".claude", ".gemini", ".config/opencode", ".codex", ".cursor", ".config/Claude"):
        (home / folder).mkdir(parents=True)
    open_entries(manager, home, "claude-code", "gemini", "opencode", "codex", "cursor", "claude-desktop")
    named = [refresh.client for refresh in manager.refreshes(sign_in=True)]
    # Gemini CLI shows an entry without a token Disconnected; a spawned `jarvis mcp` relays with JARVIS_TOKEN only.
    assert named == ["claude-desktop", "gemini"]
    assert len(manager.refreshes(sign_in=False)) == 6


def test_entries_with_a_credential_are_not_named(manager: ClientManager, home: Path) -> None:
    for folder in (".cursor", ".config/Claude", ".codex"):
        (home / folder).mkdir(parents=True)
    manager.edit("cursor", add_surfaces=["jarvis"], authorization=TOKEN)
    manager.edit("claude-desktop", add_surfaces=["jarvis"], authorization=TOKEN)  # JARVIS_TOKEN in its env
    manager.edit("codex", add_surfaces=["jarvis", "discovery"])
    codex = home / ".codex" / "config.toml"
    # A token from the environment, as Codex takes one: what a person may have added by hand.
    codex.write_text(
        codex.read_text().replace(
            "[mcp_servers.jarvis]\n", '[mcp_servers.jarvis]\nbearer_token_env_var = "JARVIS_TOKEN"\n'
        )
    )
    assert manager.refreshes(sign_in=False) == [Refresh("codex", str(codex), ["discovery"])]


def test_an_entry_gone_or_pointed_elsewhere_by_hand_is_not_named(manager: ClientManager, home: Path) -> None:
    (home / ".cursor").mkdir()
    open_entries(manager, home, "cursor")
    path = home / ".cursor" / "mcp.json"
    config = json.loads(path.read_text())
    del config["mcpServers"]["time"]
    config["mcpServers"]["jarvis-core"]["url"] = "https://elsewhere.example.com/mcp"
    path.write_text(json.dumps(config))
    assert manager.refreshes(sign_in=False) == [Refresh("cursor", str(path), ["jarvis"])]
    path.unlink()
    assert manager.refreshes(sign_in=False) == []


def test_a_file_other_than_the_clients_own_is_named_with_its_path(manager: ClientManager, home: Path) -> None:
    workspace = home / "project" / ".vscode"
    workspace.mkdir(parents=True)
    manager.edit("vscode", add_surfaces=["discovery"], path=str(workspace / "mcp.json"))
    assert manager.refreshes(sign_in=False) == [
        Refresh("vscode", str(workspace / "mcp.json"), ["discovery"], path=str(workspace / "mcp.json"))
    ]


def test_an_unreadable_file_is_left_out(manager: ClientManager, home: Path) -> None:
    (home / ".cursor").mkdir()
    (home / ".gemini").mkdir()
    open_entries(manager, home, "cursor", "gemini")
    (home / ".cursor" / "mcp.json").write_text("{ not json")
    assert [refresh.client for refresh in manager.refreshes(sign_in=False)] == ["gemini"]
