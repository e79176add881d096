"""Diff context for review: branch, `git status`, the staged or unstaged diff, files touched."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from jarvis.common.errors import InvalidArgument
from jarvis.common.roots import containing_root
from jarvis.registry.domain.project.git import GitOutput, current_branch, require_work_tree, run_git_checked
from jarvis.registry.domain.project.models import DiffResult
from jarvis.registry.domain.project.paths import resolve_project_dir

DEFAULT_MAX_BYTES = 200 * 1024
# Stays well under the 16 MiB gRPC message cap with status and file names alongside.
MAX_BYTES_LIMIT = 8 * 1024 * 1024
_MAX_NAME_BYTES = 1024 * 1024


def _text(output: GitOutput) -> str:
    data = output.stdout
    if output.truncated and (cut := data.rfind(b"\n")) >= 0:
        data = data[: cut + 1]  # end on a whole line so the cut diff still reads as a diff
    return data.decode("utf-8", errors="replace")


def _names(output: GitOutput) -> tuple[str, ...]:
    entries = output.stdout.split(b"\0")
    if output.truncated or not entries[-1]:
        entries = entries[:-1]  # a trailing partial name (or the empty tail after the last NUL)
    return tuple(entry.decode("utf-8", errors="replace") for entry in entries if entry)


def diff(
    path: Path, staged: bool = False, max_bytes: int = 0, *, allowed_roots: Sequence[Path] | None = None
) -> DiffResult:
    """Status and diff of the work tree at `path`; `max_bytes` 0 means DEFAULT_MAX_BYTES."""
    if not 0 <= max_bytes <= MAX_BYTES_LIMIT:
        raise InvalidArgument(
            f"max_bytes must be between 0 (default, {DEFAULT_MAX_BYTES} bytes) and {MAX_BYTES_LIMIT}; got {max_bytes}"
        )
    cap = max_bytes or DEFAULT_MAX_BYTES
    root = resolve_project_dir(path, allowed_roots)
    ceiling = containing_root(root, allowed_roots) if allowed_roots is not None else None
    require_work_tree(root, ceiling)
    # Submodules are left out: git would read each one's own config, whose filters are not switched off.
    scope = ["--staged"] if staged else []
    quiet = ["--no-ext-diff", "--no-textconv", "--ignore-submodules=all"]
    status = run_git_checked(
        root, ["status", "--porcelain=v1", "-b", "--ignore-submodules=all"], limit=cap, ceiling=ceiling
    )
    body = run_git_checked(root, ["diff", *scope, "--no-color", *quiet], limit=cap, ceiling=ceiling)
    names = run_git_checked(root, ["diff", *scope, "--name-only", "-z", *quiet], limit=_MAX_NAME_BYTES, ceiling=ceiling)
    return DiffResult(
        branch=current_branch(root, ceiling),
        status=_text(status),
        diff=_text(body),
        truncated=status.truncated or body.truncated,
        files=_names(names),
    )
