"""Path safety: resolve project directories and keep every read and write inside them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from jarvis.common.errors import InvalidArgument, NotFound, PermissionDenied
from jarvis.common.roots import confine

MAX_MANIFEST_BYTES = 1024 * 1024


def resolve_project_dir(path: Path, allowed_roots: Sequence[Path] | None = None) -> Path:
    """Resolve `path` (symlinks included) to an existing directory inside `allowed_roots`."""
    try:
        if allowed_roots is not None:
            # Check containment before existence, so callers cannot probe which paths exist
            # outside the roots by telling NotFound from PermissionDenied.
            confine(path, allowed_roots, "project path")
        resolved = path.resolve(strict=True)
    except FileNotFoundError:
        raise NotFound(
            f"project path {path} does not exist; pass the absolute path of an existing project directory"
        ) from None
    except PermissionError:
        raise PermissionDenied(f"project path {path} cannot be read by the registry host") from None
    except (RuntimeError, OSError) as exc:  # symlink loops and the like
        raise InvalidArgument(f"project path {path} cannot be resolved: {exc}") from None
    if not resolved.is_dir():
        raise InvalidArgument(f"project path {path} is not a directory; pass the project's root directory")
    return resolved


def is_inside(root: Path, path: Path) -> bool:
    """True when `path`, with symlinks resolved, stays inside the resolved `root`."""
    try:
        return path.resolve(strict=True).is_relative_to(root)
    except (OSError, RuntimeError):
        return False


def read_text_inside(root: Path, relative: str, limit: int = MAX_MANIFEST_BYTES) -> str | None:
    """Read a small text file of the project; None if absent, too big, or a symlink out of it."""
    path = root / relative
    if not path.is_file() or not is_inside(root, path):
        return None
    try:
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError:
        return None
    if len(data) > limit:
        return None
    return data.decode("utf-8", errors="replace")
