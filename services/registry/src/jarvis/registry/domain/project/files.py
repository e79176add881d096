"""Atomic file writes and non-clobbering backups for scaffolded files."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

NEW_FILE_MODE = 0o644


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data` all at once: readers see the old file or the new, never half."""
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else NEW_FILE_MODE
    # The temporary file sits beside the target so os.replace stays on one filesystem (atomic).
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)  # mkstemp creates 0600; keep the old file's mode or use 0644
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def backup_path(path: Path) -> Path:
    """`<file>.bak`, or `<file>.bak.N` when earlier backups exist: an older backup is never lost."""
    candidate = path.with_name(path.name + ".bak")
    number = 1
    while candidate.exists() or candidate.is_symlink():
        candidate = path.with_name(f"{path.name}.bak.{number}")
        number += 1
    return candidate


def back_up(path: Path) -> Path:
    """Copy `path` to a fresh backup (atomically) and return where it went."""
    target = backup_path(path)
    atomic_write(target, path.read_bytes())
    return target
