"""File plumbing for client configs: reading text, timestamped backups, atomic writes."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from datetime import UTC, datetime
from pathlib import Path

BOM = "\ufeff"
BACKUPS_KEPT = 5
NEW_FILE_MODE = 0o600  # client configs hold tokens in env/headers


def read_text(path: Path) -> str | None:
    """The file's text, or None when it does not exist. UnicodeDecodeError when it is not UTF-8."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return data.decode("utf-8")


def backup(path: Path, now: datetime | None = None) -> Path:
    """Copy `path` to `<path>.bak-<UTC timestamp>` beside it (mode kept); keep the newest BACKUPS_KEPT."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S.%fZ")
    target = path.with_name(f"{path.name}.bak-{stamp}")
    counter = 1
    while target.exists():  # two backups within one microsecond: never overwrite the older one
        target = path.with_name(f"{path.name}.bak-{stamp}-{counter}")
        counter += 1
    shutil.copy2(path, target)
    prune_backups(path)
    return target


def list_backups(path: Path) -> list[Path]:
    """Backups of `path`, oldest first (timestamps sort as text)."""
    prefix = f"{path.name}.bak-"
    return sorted(p for p in path.parent.iterdir() if p.name.startswith(prefix) and p.is_file())


def prune_backups(path: Path, keep: int = BACKUPS_KEPT) -> None:
    backups = list_backups(path)
    for old in backups[: max(len(backups) - keep, 0)]:
        with contextlib.suppress(FileNotFoundError):
            old.unlink()


def atomic_write(path: Path, text: str, default_mode: int = NEW_FILE_MODE) -> None:
    """Replace `path` with `text` so readers see the old or the new file, never half of one.

    Temp file in the same directory, fsync, os.replace, then fsync the directory. The file's
    permission bits are kept; a new file gets `default_mode`.
    """
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = default_mode
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
