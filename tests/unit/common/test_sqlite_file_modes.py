"""SQLite databases are created owner-only and tightened when an older start left them open (issue 34)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sqlalchemy import text

from jarvis.common.sql.database import Database


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_database_and_its_side_files_are_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "data" / "x.db"
    old_umask = os.umask(0o022)
    try:
        db = Database.from_url(f"sqlite:///{path}")
        with db.write() as session:
            session.execute(text("CREATE TABLE t (a INTEGER)"))
            session.execute(text("INSERT INTO t VALUES (1)"))
        written = sorted(p.name for p in path.parent.iterdir())
        modes = {name: oct(mode(path.parent / name)) for name in written}
        db.close()
    finally:
        os.umask(old_umask)
    assert {"x.db", "x.db-wal", "x.db-shm"} <= set(written), written
    assert modes == dict.fromkeys(written, oct(0o600))
    assert mode(path.parent) == 0o700


def test_a_loose_database_is_tightened_at_open(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").touch()
        Path(f"{path}{suffix}").chmod(0o664)
    Database.from_url(f"sqlite:///{path}").close()
    assert [oct(mode(Path(f"{path}{s}"))) for s in ("", "-wal", "-shm")] == [oct(0o600)] * 3


def test_an_existing_directory_keeps_its_mode(tmp_path: Path) -> None:
    """Jarvis makes the directory private when it makes it; one the user made is theirs (the status warns)."""
    directory = tmp_path / "shared"
    directory.mkdir()
    directory.chmod(0o750)
    Database.from_url(f"sqlite:///{directory / 'x.db'}").close()
    assert mode(directory) == 0o750
    assert mode(directory / "x.db") == 0o600
