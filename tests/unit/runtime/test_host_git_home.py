"""The runtime's host-side git needs no writable temporary directory (a container's read-only root)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from jarvis.runtime.adapters.git import HostGit
from tests.support.docker_env import git_available
from tests.support.git_env import BARE_GIT_ENV


def _repository(path: Path) -> Path:
    git = git_available()
    path.mkdir()
    (path / "README").write_text("hello\n")
    for argv in (["init", "--quiet"], ["add", "README"], ["commit", "--quiet", "-m", "first"]):
        subprocess.run([git, *argv], cwd=path, env=BARE_GIT_ENV, check=True)
    return path


def test_clones_with_no_temporary_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _repository(tmp_path / "source")
    # As on a read-only root without a /tmp tmpfs: every temporary file or directory fails.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-tmp"))
    with pytest.raises(FileNotFoundError):
        tempfile.mkdtemp()

    home = tmp_path / "data" / "git-home"
    host_git = HostGit(home)
    host_git.clone(str(source), tmp_path / "clone", timeout=60)

    assert (tmp_path / "clone" / "README").read_text() == "hello\n"
    assert home.is_dir()
    assert (home.stat().st_mode & 0o777) == 0o700


def test_clones_a_local_source_owned_by_another_user(tmp_path: Path) -> None:
    """An operator's checkout mounted into the runtime's container belongs to someone else: git's
    "dubious ownership" check must not refuse it (the tests run as root, which can hand it away)."""
    source = _repository(tmp_path / "source")
    for path in (source, *source.rglob("*")):
        os.lchown(path, 54321, 54321)
    HostGit(tmp_path / "git-home").clone(str(source), tmp_path / "clone", timeout=60)
    assert (tmp_path / "clone" / "README").read_text() == "hello\n"
