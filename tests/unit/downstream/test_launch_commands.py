"""Launchers found the way scripts/bootstrap installed them when PATH lacks them."""

from __future__ import annotations

import sys
from pathlib import Path

from jarvis.aggregator.downstream.transport.commands import fix_for, resolve

VENV_BIN = Path(sys.executable).parent


def _script(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_uvx_of_a_server_the_venv_has_runs_it_from_the_venv(tmp_path: Path) -> None:
    assert (VENV_BIN / "mcp-server-time").exists(), "scripts/bootstrap installs mcp-server-time"
    assert resolve("uvx", ("mcp-server-time", "--local-timezone", "UTC"), "/usr/bin", tmp_path) == (
        str(VENV_BIN / "mcp-server-time"),
        ("--local-timezone", "UTC"),
    )


def test_uvx_missing_from_path_is_found_in_the_user_bin_pip_used(tmp_path: Path) -> None:
    uvx = _script(tmp_path / ".local" / "bin" / "uvx")
    assert resolve("uvx", ("some-server@1.2",), "/nonexistent", tmp_path) == (str(uvx), ("some-server@1.2",))
    # uvx options are not a package name: uvx itself runs
    assert resolve("uvx", ("--from", "x", "y"), "/nonexistent", tmp_path) == (str(uvx), ("--from", "x", "y"))


def test_a_command_on_path_or_given_as_a_path_is_left_alone(tmp_path: Path) -> None:
    _script(tmp_path / ".local" / "bin" / "npx")
    on_path = _script(tmp_path / "path" / "npx")
    assert resolve("npx", ("-y", "pkg"), str(on_path.parent), tmp_path) == ("npx", ("-y", "pkg"))
    assert resolve("/opt/x/server", ("a",), "/nonexistent", tmp_path) == ("/opt/x/server", ("a",))


def test_a_launcher_found_nowhere_stays_as_given_and_the_error_says_the_fix(tmp_path: Path) -> None:
    assert resolve("uvx-nowhere", (), "/nonexistent", tmp_path) == ("uvx-nowhere", ())
    assert "pip install --user uv" in fix_for("uvx")
    assert "npx" in fix_for("npx")
    assert "jarvis_server action=edit" in fix_for("my-launcher")
