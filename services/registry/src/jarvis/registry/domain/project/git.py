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
# A repository's own config (and the files it includes) can name programs git runs on a mere read:
# an fsmonitor hook on `status`, external diff, textconv and filter drivers on `diff`, gpg on a
# signed `log`. Command-line config wins over all of it, so every run switches those off here;
# filter drivers have per-repository names and are switched off by `_without_filters`. External
# diff and textconv are also refused by the callers' --no-ext-diff/--no-textconv.
_SAFE_CONFIG = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "diff.external=",
    "-c",
    "log.showSignature=false",
    "-c",
    "core.quotepath=off",
)
_FILTER_KEYS = ("clean", "smudge", "process")
_MAX_FILTER_CONFIG_BYTES = 256 * 1024


@dataclass(frozen=True)
class GitOutput:
    returncode: int
    stdout: bytes
    stderr: str
    truncated: bool


def _environment(ceiling: Path | None) -> dict[str, str]:
    """A clean environment: none of Jarvis's own variables (credentials among them) reach git.

    No system or global config (only the repository's, which the command line overrides), no
    prompts for credentials, no pager, no index lock taken by a read-only `status`, English
    messages so "not a git repository" can be recognised, and no looking for a repository above
    `ceiling` (the project root the path was confined to).
    """
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "GIT_OPTIONAL_LOCKS": "0",
    }
    if ceiling is not None:
        env["GIT_CEILING_DIRECTORIES"] = str(ceiling)
    return env


def _without_filters(executable: str, cwd: Path, env: dict[str, str]) -> dict[str, str]:
    """`env` plus an empty command for every filter driver the repository configures: it then runs nothing.

    The overrides go in GIT_CONFIG_COUNT/KEY/VALUE (command-line precedence, and unlike `-c` no
    parsing of a driver name that holds a '='). Reading config runs no program, so asking git for
    the drivers is safe.
    """
    listed = subprocess.run(  # noqa: S603 - fixed argv, no shell
        [executable, "-C", str(cwd), *_SAFE_CONFIG, "config", "--null", "--name-only", "--get-regexp", r"^filter\."],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=env,
        timeout=GIT_TIMEOUT_SECONDS,
        check=False,
    )
    names = listed.stdout[:_MAX_FILTER_CONFIG_BYTES].decode("utf-8", errors="surrogateescape").split("\0")
    drivers = sorted({name[len("filter.") :].rpartition(".")[0] for name in names if name.startswith("filter.")})
    pairs = [(f"filter.{driver}.{key}", "") for driver in drivers if driver for key in _FILTER_KEYS]
    pairs += [(f"filter.{driver}.required", "false") for driver in drivers if driver]
    overrides = {"GIT_CONFIG_COUNT": str(len(pairs))}
    for index, (key, value) in enumerate(pairs):
        overrides[f"GIT_CONFIG_KEY_{index}"] = key
        overrides[f"GIT_CONFIG_VALUE_{index}"] = value
    return {**env, **overrides}


def run_git(
    cwd: Path,
    args: Sequence[str],
    *,
    limit: int | None = None,
    timeout: float = GIT_TIMEOUT_SECONDS,
    ceiling: Path | None = None,
) -> GitOutput:
    """Run `git -C cwd ARGS` with nothing of the repository's able to run a program; read at most
    `limit` bytes of stdout, then stop git."""
    executable = shutil.which("git")
    if executable is None:
        raise Unavailable("git is not installed on the registry host; install git to use project diff")
    env = _without_filters(executable, cwd, _environment(ceiling))
    argv = [executable, "-C", str(cwd), *_SAFE_CONFIG, *args]
    timed_out = threading.Event()
    with (
        tempfile.TemporaryFile() as errors,
        subprocess.Popen(  # noqa: S603 - fixed argv, no shell
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors, env=env
        ) as process,
    ):

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


def run_git_checked(
    cwd: Path, args: Sequence[str], *, limit: int | None = None, ceiling: Path | None = None
) -> GitOutput:
    """run_git, failing with git's own first error line; a run stopped at `limit` is not a failure."""
    output = run_git(cwd, args, limit=limit, ceiling=ceiling)
    if output.returncode != 0 and not output.truncated:
        raise FailedPrecondition(f"git {args[0]} failed in {cwd}: {_reason(output)}")
    return output


def is_work_tree(cwd: Path, ceiling: Path | None = None) -> bool:
    """True inside a git work tree (not inside .git itself, not outside any repository)."""
    output = run_git(cwd, ["rev-parse", "--is-inside-work-tree"], ceiling=ceiling)
    if output.returncode == 0:
        return output.stdout.strip() == b"true"
    if "not a git repository" in output.stderr:
        return False
    # Anything else (e.g. "detected dubious ownership") is worth showing as it is.
    raise FailedPrecondition(f"git cannot read {cwd}: {_reason(output)}")


def require_work_tree(cwd: Path, ceiling: Path | None = None) -> None:
    """Fail with a message saying what to do when `cwd` is not inside a git work tree."""
    if not is_work_tree(cwd, ceiling):
        raise FailedPrecondition(
            f"{cwd} is not a git repository; run `git init` there or pass a directory inside a git work tree"
        )


def current_branch(cwd: Path, ceiling: Path | None = None) -> str:
    """The checked-out branch (also before the first commit), or 'detached at <sha>'."""
    output = run_git(cwd, ["symbolic-ref", "--short", "-q", "HEAD"], ceiling=ceiling)
    if output.returncode == 0:
        return output.stdout.decode("utf-8", errors="replace").strip()
    sha = run_git(cwd, ["rev-parse", "--short", "HEAD"], ceiling=ceiling)
    return f"detached at {sha.stdout.decode().strip()}" if sha.returncode == 0 else "HEAD"
