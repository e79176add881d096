"""The one line `jarvis up` prints when it requires a credential and entries Jarvis wrote carry none (issue 48 item
4): which client to refresh, with the command that does it."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from jarvis.cli.client_refresh import client_refreshes, refresh_line
from jarvis.cli.embedded import EmbeddedSettings
from jarvis.registry.domain.clients import ClientManager, Refresh

COMMAND = "/opt/jarvis/.venv/bin/jarvis --data-dir /srv/jarvis"


def test_one_line_names_each_client_with_the_command_that_refreshes_it() -> None:
    refreshes = [
        Refresh("claude-code", "/home/dev/.claude.json", ["time", "profile:core", "jarvis"]),
        Refresh(
            "vscode",
            "/home/dev/my project/.vscode/mcp.json",
            ["discovery"],
            path="/home/dev/my project/.vscode/mcp.json",
        ),
    ]
    line = refresh_line(refreshes, COMMAND)
    assert line == (
        "Client entries Jarvis wrote without a token are refused now that it requires one; refresh them: "
        f"{COMMAND} client edit claude-code --add time --add profile:core --add jarvis; "
        f"{COMMAND} client edit vscode --add discovery --path '/home/dev/my project/.vscode/mcp.json'"
    )
    assert "\n" not in line
    # Each command is one a shell runs as printed.
    assert shlex.split(line.split("refresh them: ")[1].split("; ")[1])[-2:] == [
        "--path",
        "/home/dev/my project/.vscode/mcp.json",
    ]


def test_nothing_to_refresh_prints_nothing() -> None:
    assert refresh_line([], COMMAND) == ""


def test_the_entries_are_read_where_jarvis_up_keeps_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`jarvis up --data-dir D` checks D's record of the entries, in the home its registry manages."""
    home, data = tmp_path / "home", tmp_path / "data"
    (home / ".gemini").mkdir(parents=True)
    (home / ".claude").mkdir()
    monkeypatch.setenv("JARVIS_REGISTRY_HOME", str(home))
    manager = ClientManager(data, home, "http://127.0.0.1:8765", platform="linux")
    for client in ("gemini", "claude-code"):
        manager.edit(client, add_surfaces=["jarvis"])
    settings = EmbeddedSettings(data_dir=data)
    assert [r.client for r in client_refreshes(settings, sign_in=False)] == ["claude-code", "gemini"]
    assert [r.client for r in client_refreshes(settings, sign_in=True)] == ["gemini"]
    assert client_refreshes(EmbeddedSettings(data_dir=tmp_path / "other"), sign_in=False) == []
