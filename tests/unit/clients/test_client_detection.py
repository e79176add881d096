"""A client counts as installed by its folder, its command on PATH, or its app where the installer puts it; writing
its config makes the folder a command-line client has not made yet (issue 37 item 5)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from jarvis.common.errors import FailedPrecondition
from jarvis.registry.domain.clients import ClientManager, ClientStatus
from tests.unit.clients.clients_support import AGGREGATOR


def status(manager: ClientManager, name: str) -> ClientStatus:
    return next(s for s in manager.list() if s.name == name)


def put_command(bin_dir: Path, name: str) -> None:
    command = bin_dir / name
    command.write_text("#!/bin/sh\n")
    command.chmod(0o755)


@pytest.mark.parametrize(("client", "command"), [("codex", "codex"), ("gemini", "gemini"), ("zed", "zeditor")])
def test_detected_by_its_command_on_path(manager: ClientManager, bin_dir: Path, client: str, command: str) -> None:
    assert not status(manager, client).detected
    put_command(bin_dir, command)
    found = status(manager, client)
    assert found.detected
    assert not found.config_exists


def test_a_file_that_is_not_executable_is_no_command(manager: ClientManager, bin_dir: Path) -> None:
    (bin_dir / "codex").write_text("not a program")
    assert not status(manager, "codex").detected


def test_detected_by_the_app_where_its_installer_puts_it(home: Path, data_dir: Path, bin_dir: Path) -> None:
    mac = ClientManager(data_dir, home, AGGREGATOR, platform="darwin", search_path=str(bin_dir))
    assert not status(mac, "cursor").detected
    (home / "Applications" / "Cursor.app").mkdir(parents=True)  # a per-user install on macOS
    assert status(mac, "cursor").detected


def test_writing_makes_the_folder_of_a_client_found_on_path(manager: ClientManager, home: Path, bin_dir: Path) -> None:
    """Codex on PATH before its first run has no ~/.codex yet."""
    put_command(bin_dir, "codex")
    result = manager.edit("codex", add_profiles=["core"])
    path = home / ".codex" / "config.toml"
    assert result.config_path == str(path)
    assert tomllib.loads(path.read_text())["mcp_servers"]["jarvis-core"] == {"url": f"{AGGREGATOR}/mcp/profile/core"}
    assert result.notes == []


def test_a_client_found_nowhere_is_refused_with_what_to_do(manager: ClientManager, home: Path) -> None:
    with pytest.raises(FailedPrecondition, match=r"no command on PATH.*install it first, or name the file to write"):
        manager.edit("codex", add_profiles=["core"])
    assert not (home / ".codex").exists()


def test_gemini_note_on_trusted_folders(manager: ClientManager, home: Path, bin_dir: Path) -> None:
    put_command(bin_dir, "gemini")
    result = manager.edit("gemini", add_surfaces=["jarvis"])
    assert len(result.notes) == 1
    assert "only in folders you trust" in result.notes[0]
    assert "/permissions" in result.notes[0]
    removed = manager.edit("gemini", remove_surfaces=["jarvis"])
    assert removed.notes == []  # nothing new to connect: nothing to trust
