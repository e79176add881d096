"""diff() against real git repositories: unstaged, staged, truncation, unborn branch, errors."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from jarvis.common.errors import FailedPrecondition, InvalidArgument, Unavailable
from jarvis.registry.domain.project import MAX_BYTES_LIMIT, analyze, diff
from tests.support.git_env import GIT_ENV
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
    assert report.notes == (
        "git state unknown: git is not installed on the registry host; install git to use project diff",
    )


# --- issue 15: nothing a repository configures runs on the host when Jarvis reads it ----------


def _hostile(repo: Path, git: Git, marker_dir: Path) -> dict[str, Path]:
    """Every program a repository's own config can make `status`/`diff` run, each touching its own marker."""
    markers = {
        name: marker_dir / name
        for name in ("clean", "process", "textconv", "external", "fsmonitor", "odd-name", "included")
    }
    hook = marker_dir / "fsmonitor-hook"
    hook.write_text(f"#!/bin/sh\ntouch {markers['fsmonitor']}\n")
    hook.chmod(0o755)
    included = marker_dir / "included.cfg"
    included.write_text(f'[filter "inc"]\n\tclean = "touch {markers["included"]}; cat"\n')
    write(repo, {".gitattributes": "*.py filter=evil diff=evil\n*.md filter=odd=name\n*.txt filter=inc\n"})
    git(repo, "config", "filter.evil.clean", f"touch {markers['clean']}; cat")
    git(repo, "config", "filter.evil.required", "true")
    git(repo, "config", "filter.odd=name.clean", f"touch {markers['odd-name']}; cat")
    git(repo, "config", "diff.evil.textconv", f"touch {markers['textconv']}; cat")
    git(repo, "config", "diff.external", f"sh -c 'touch {markers['external']}'")
    git(repo, "config", "core.fsmonitor", str(hook))
    git(repo, "config", "include.path", str(included))
    write(repo, {"app.py": "print('changed')\n", "README.md": "changed\n", "notes.txt": "new\n"})
    git(repo, "add", "notes.txt")
    write(repo, {"notes.txt": "newer\n"})
    return markers


def test_diff_runs_no_filter_textconv_external_diff_or_fsmonitor_of_the_repo(
    repo: Path, git: Git, tmp_path: Path
) -> None:
    markers = _hostile(repo, git, tmp_path)
    # The repository is really hostile: plain git runs its programs (and may fail on their output).
    subprocess.run(["git", "-C", str(repo), "diff"], env={**os.environ, **GIT_ENV}, capture_output=True, check=False)
    subprocess.run(
        ["git", "-C", str(repo), "diff", "--no-ext-diff", "--", "notes.txt"],
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        check=False,
    )
    ran = {name for name, marker in markers.items() if marker.exists()}
    assert {"clean", "external", "included", "fsmonitor"} <= ran, f"the fixture no longer triggers git: {ran}"
    for marker in markers.values():
        marker.unlink(missing_ok=True)

    unstaged, staged = diff(repo), diff(repo, staged=True)
    report = analyze(repo)

    assert [name for name, marker in markers.items() if marker.exists()] == []
    assert "+print('changed')" in unstaged.diff  # the plain content, not a driver's
    assert set(unstaged.files) >= {"app.py", "README.md", "notes.txt"}
    assert staged.files == (".gitattributes", "notes.txt") or "notes.txt" in staged.files
    assert report.is_git_repo


def test_process_filter_is_switched_off_too(repo: Path, git: Git, tmp_path: Path) -> None:
    marker = tmp_path / "process"
    write(repo, {".gitattributes": "* filter=lfsish\n"})
    git(repo, "config", "filter.lfsish.process", f"sh -c 'touch {marker}'")
    write(repo, {"app.py": "print('changed')\n"})
    assert "app.py" in diff(repo).files
    assert not marker.exists()


def test_git_never_sees_jarvis_environment(
    repo: Path, git: Git, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Variables of Jarvis's own (credentials, GIT_DIR redirects) do not reach git or what it might run."""
    other = tmp_path / "other"
    git(tmp_path, "init", "-q", str(other))
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'filter.fromenv.clean'='touch {tmp_path / 'env-marker'}; cat'")
    write(repo, {".gitattributes": "app.py filter=fromenv\n"})
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "attributes")
    write(repo, {"app.py": "print('changed')\n"})
    assert diff(repo).files == ("app.py",)
    assert not (tmp_path / "env-marker").exists()


def test_a_repository_above_the_project_root_is_not_used(tmp_path: Path, git: Git) -> None:
    """With roots, git looks for the repository no higher than the root the path is under."""
    outer = tmp_path / "home"
    git(tmp_path, "init", "-q", str(outer))
    write(outer, {"secret.txt": "v1\n"})
    git(outer, "add", "secret.txt")
    git(outer, "commit", "-qm", "dotfiles")
    write(outer, {"secret.txt": "v2\n", "projects/plain/main.py": "x = 1\n"})
    inside = outer / "projects"
    with pytest.raises(FailedPrecondition, match="not a git repository"):
        diff(inside / "plain", allowed_roots=[inside])
    assert not analyze(inside / "plain", allowed_roots=[inside]).is_git_repo
    assert "secret.txt" in diff(inside / "plain").files  # without roots git walks up, as it always did
