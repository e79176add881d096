"""diff() against real git repositories: unstaged, staged, truncation, unborn branch, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from jarvis.common.errors import FailedPrecondition, InvalidArgument, Unavailable
from jarvis.registry.domain.project import MAX_BYTES_LIMIT, analyze, diff
from tests.unit.project.project_support import Git, write


def test_unstaged_and_staged_changes_are_separate(repo: Path, git: Git) -> None:
    write(repo, {"app.py": "print('two')\n", "README.md": "hello again\n"})
    git(repo, "add", "README.md")

    unstaged = diff(repo)
    staged = diff(repo, staged=True)

    assert unstaged.branch == staged.branch == "main"
    assert unstaged.files == ("app.py",)
    assert "-print('one')\n+print('two')" in unstaged.diff
    assert "README.md" not in unstaged.diff
    assert staged.files == ("README.md",)
    assert "+hello again" in staged.diff
    assert "app.py" not in staged.diff
    assert unstaged.status.splitlines() == ["## main", "M  README.md", " M app.py"]
    assert not unstaged.truncated
    assert not staged.truncated


def test_clean_tree_has_empty_diff(repo: Path) -> None:
    result = diff(repo)
    assert (result.diff, result.files, result.status) == ("", (), "## main\n")


def test_diff_is_truncated_at_max_bytes_on_a_line_boundary(repo: Path) -> None:
    write(repo, {"app.py": "".join(f"print({i})\n" for i in range(5000))})

    result = diff(repo, max_bytes=1000)
    full = diff(repo)

    assert result.truncated
    assert len(result.diff.encode()) <= 1000
    assert result.diff.endswith("\n")
    assert full.diff.startswith(result.diff)
    assert result.files == ("app.py",)
    assert not full.truncated
    assert len(full.diff) > 20_000


def test_default_cap_applies_when_max_bytes_is_zero(repo: Path) -> None:
    write(repo, {"app.py": "x = 1\n" * 60_000})  # ~360 KB of diff, over the 200 KiB default

    result = diff(repo, max_bytes=0)

    assert result.truncated
    assert 200 * 1024 - 100 < len(result.diff.encode()) <= 200 * 1024


def test_repository_without_commits(tmp_path: Path, git: Git) -> None:
    root = write(tmp_path / "fresh", {"new.py": "x = 1\n", "later.txt": "not yet added\n"})
    git(root, "init", "-q", "-b", "trunk")
    git(root, "add", "new.py")

    staged = diff(root, staged=True)
    unstaged = diff(root)

    assert staged.branch == "trunk"
    assert staged.files == ("new.py",)
    assert "new file mode" in staged.diff
    assert "+x = 1" in staged.diff
    assert staged.status.startswith("## No commits yet on trunk")
    assert "?? later.txt" in staged.status
    assert unstaged.diff == ""
    assert unstaged.files == ()


def test_detached_head_is_named(repo: Path, git: Git) -> None:
    sha = git(repo, "rev-parse", "--short", "HEAD").strip()
    git(repo, "checkout", "-q", "--detach")
    assert diff(repo).branch == f"detached at {sha}"


def test_subdirectory_of_a_repository_works(repo: Path) -> None:
    write(repo, {"pkg/mod.py": "", "app.py": "changed\n"})
    assert diff(repo / "pkg").files == ("app.py",)


def test_not_a_repository_fails_precondition(tmp_path: Path) -> None:
    with pytest.raises(FailedPrecondition, match="is not a git repository; run `git init`"):
        diff(tmp_path)


@pytest.mark.parametrize("max_bytes", [-1, MAX_BYTES_LIMIT + 1])
def test_max_bytes_out_of_range(repo: Path, max_bytes: int) -> None:
    with pytest.raises(InvalidArgument, match="max_bytes must be between 0"):
        diff(repo, max_bytes=max_bytes)


def test_repository_config_cannot_run_programs(repo: Path, git: Git, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    hook = write(tmp_path, {"hook.sh": f"#!/bin/sh\ntouch {marker}\n"}) / "hook.sh"
    hook.chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(hook))
    git(repo, "config", "diff.external", str(hook))
    write(repo, {"app.py": "changed\n"})

    result = diff(repo)

    assert result.files == ("app.py",)
    assert not marker.exists()


def test_without_git_diff_is_unavailable_and_analyze_still_reports(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # a host without git

    with pytest.raises(Unavailable, match="git is not installed on the registry host"):
        diff(repo)
    report = analyze(repo)
    assert report.languages == ("python",)
    assert not report.is_git_repo
    assert report.notes == ("git state unknown: git is not installed on the registry host; "
                            "install git to use project diff",)
