"""Run the real `git` safely (argv, no shell, bounded output, timeout) and read a work tree's state."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from jarvis.common.errors import DeadlineExceeded, FailedPrecondition, Unavailable

GIT_TIMEOUT_SECONDS = 30.0
# Never let a repository's own config run programs on a read: an fsmonitor hook would run on
# `git status`, external diff and textconv drivers on `git diff` (those two are off by flag).
_SAFE_CONFIG = ("-c", "core.fsmonitor=false", "-c", "core.quotepath=off")
# Variables that would point git at another repository than the one asked about.
_REDIRECTING_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE")


@dataclass(frozen=True)
class GitOutput:
    returncode: int
    stdout: bytes
    stderr: str
    truncated: bool


def _environment() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in _REDIRECTING_ENV}
    # No prompts for credentials, no pager, no index lock taken by a read-only `status`,
    # and English messages so "not a git repository" can be recognised.
    env.update(GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    return env


def run_git(cwd: Path, args: Sequence[str], *, limit: int | None = None,
            timeout: float = GIT_TIMEOUT_SECONDS) -> GitOutput:
    """Run `git -C cwd ARGS`; read at most `limit` bytes of stdout, then stop git."""
    executable = shutil.which("git")
    if executable is None:
        raise Unavailable("git is not installed on the registry host; install git to use project diff")
    argv = [executable, "-C", str(cwd), *_SAFE_CONFIG, *args]
    timed_out = threading.Event()
    with tempfile.TemporaryFile() as errors, subprocess.Popen(  # noqa: S603 - fixed argv, no shell
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors, env=_environment()
    ) as process:

        def expire() -> None:
            timed_out.set()
            process.kill()

        timer = threading.Timer(timeout, expire)
        timer.start()
        try:
            assert process.stdout is not None
            # Reading to a cap (instead of communicate()) keeps a huge diff out of memory.
            data = process.stdout.read(-1 if limit is None else limit + 1)
            truncated = limit is not None and len(data) > limit
            if truncated:
                process.kill()  # the rest is not wanted
            process.wait()
        finally:
            timer.cancel()
        errors.seek(0)
        stderr = errors.read(64 * 1024).decode("utf-8", errors="replace").strip()
    if timed_out.is_set():
        raise DeadlineExceeded(f"git {args[0]} in {cwd} took longer than {timeout:g}s and was stopped")
    return GitOutput(process.returncode, data[:limit] if truncated else data, stderr, truncated)


def _reason(output: GitOutput) -> str:
    return output.stderr.splitlines()[0] if output.stderr else f"exit status {output.returncode}"


def run_git_checked(cwd: Path, args: Sequence[str], *, limit: int | None = None) -> GitOutput:
    """run_git, failing with git's own first error line; a run stopped at `limit` is not a failure."""
    output = run_git(cwd, args, limit=limit)
    if output.returncode != 0 and not output.truncated:
        raise FailedPrecondition(f"git {args[0]} failed in {cwd}: {_reason(output)}")
    return output


def is_work_tree(cwd: Path) -> bool:
    """True inside a git work tree (not inside .git itself, not outside any repository)."""
    output = run_git(cwd, ["rev-parse", "--is-inside-work-tree"])
    if output.returncode == 0:
        return output.stdout.strip() == b"true"
    if "not a git repository" in output.stderr:
        return False
    # Anything else (e.g. "detected dubious ownership") is worth showing as it is.
    raise FailedPrecondition(f"git cannot read {cwd}: {_reason(output)}")


def require_work_tree(cwd: Path) -> None:
    """Fail with a message saying what to do when `cwd` is not inside a git work tree."""
    if not is_work_tree(cwd):
        raise FailedPrecondition(
            f"{cwd} is not a git repository; run `git init` there or pass a directory inside a git work tree"
        )


def current_branch(cwd: Path) -> str:
    """The checked-out branch (also before the first commit), or 'detached at <sha>'."""
    output = run_git(cwd, ["symbolic-ref", "--short", "-q", "HEAD"])
    if output.returncode == 0:
        return output.stdout.decode("utf-8", errors="replace").strip()
    sha = run_git(cwd, ["rev-parse", "--short", "HEAD"])
    return f"detached at {sha.stdout.decode().strip()}" if sha.returncode == 0 else "HEAD"
