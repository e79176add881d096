"""Path safety: existing directories only, inside the allowed roots, no `..` or symlink escape."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jarvis.common.errors import InvalidArgument, NotFound, PermissionDenied
from jarvis.registry.domain.project import analyze, resolve_project_dir
from tests.unit.project.project_support import write


def test_missing_path_is_not_found_and_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(NotFound, match="nope does not exist; pass the absolute path"):
        analyze(missing)


def test_file_is_not_a_project_directory(tmp_path: Path) -> None:
    file = write(tmp_path, {"a.txt": "x"}) / "a.txt"
    with pytest.raises(InvalidArgument, match=r"a\.txt is not a directory"):
        analyze(file)


def test_inside_allowed_root_is_resolved(tmp_path: Path) -> None:
    project = tmp_path / "root" / "app"
    project.mkdir(parents=True)
    assert resolve_project_dir(tmp_path / "root" / "app" / ".." / "app", [tmp_path / "root"]) == project


@pytest.mark.parametrize("escape", ["dotdot", "sibling-prefix", "symlink", "missing-outside"])
def test_escapes_from_allowed_roots_are_denied(tmp_path: Path, escape: str) -> None:
    root = tmp_path / "projects"
    (root / "app").mkdir(parents=True)
    (tmp_path / "projects-secret").mkdir()
    os.symlink(tmp_path / "projects-secret", root / "link")
    attempt = {
        "dotdot": root / "app" / ".." / ".." / "projects-secret",
        # A string-prefix check would let /…/projects-secret pass for /…/projects.
        "sibling-prefix": tmp_path / "projects-secret",
        "symlink": root / "link",
        # Outside the roots, a missing path is denied too, so existence cannot be probed.
        "missing-outside": tmp_path / "elsewhere" / "nothing",
    }[escape]
    with pytest.raises(PermissionDenied, match="outside the allowed project roots"):
        resolve_project_dir(attempt, [root])


def test_symlink_loop_is_an_invalid_argument(tmp_path: Path) -> None:
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    with pytest.raises(InvalidArgument, match="cannot be resolved"):
        analyze(tmp_path / "a")
