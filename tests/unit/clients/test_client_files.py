"""Atomic writes, permission bits, symlinks and backup rotation for client config files."""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

from jarvis.registry.domain.clients import files


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_atomic_write_keeps_permission_bits(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text("{}")
    os.chmod(path, 0o640)
    files.atomic_write(path, '{"a": 1}')
    assert path.read_text() == '{"a": 1}'
    assert mode(path) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["mcp.json"]  # no temp file left behind


def test_new_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "new.json"
    files.atomic_write(path, "{}")
    assert mode(path) == 0o600


def test_atomic_write_replaces_a_symlink_itself_never_its_target(tmp_path: Path) -> None:
    """Callers resolve links first (clients/paths.py); a link swapped in afterwards is replaced, not followed."""
    real = tmp_path / "elsewhere.json"
    real.write_text("{}")
    link = tmp_path / "mcp.json"
    link.symlink_to(real)
    files.atomic_write(link, '{"b": 2}')
    assert not link.is_symlink()
    assert real.read_text() == "{}"


def test_backups_are_timestamped_copies_and_only_five_kept(tmp_path: Path) -> None:
    path = tmp_path / "claude_desktop_config.json"
    start = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    made = []
    for i in range(7):
        path.write_text(f'{{"v": {i}}}')
        made.append(files.backup(path, now=start + timedelta(seconds=i)))
    kept = files.list_backups(path)
    assert kept == made[2:]
    assert kept[0].name == "claude_desktop_config.json.bak-20250102T030407.000000Z"
    assert kept[-1].read_text() == '{"v": 6}'


def test_backup_within_same_instant_does_not_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    now = datetime(2025, 1, 1, tzinfo=UTC)
    path.write_text("1")
    first = files.backup(path, now=now)
    path.write_text("2")
    second = files.backup(path, now=now)
    assert first != second
    assert (first.read_text(), second.read_text()) == ("1", "2")


def test_backup_keeps_mode(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text("{}")
    os.chmod(path, 0o600)
    assert mode(files.backup(path)) == 0o600
