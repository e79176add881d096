"""Engines for SQLite and PostgreSQL, and the one way to run a transaction (every SQL service)."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from jarvis.common.errors import AlreadyExists, InvalidArgument, Unavailable

WRITE_OPTION = "jarvis_write"
# What SQLite writes beside a database file; it creates each with the database file's own mode.
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")

log = logging.getLogger(__name__)


def normalize_url(url: str) -> str:
    """Use the psycopg 3 driver for PostgreSQL whatever spelling the URL came in."""
    for prefix in ("postgresql://", "postgres://", "postgresql+psycopg2://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def create_db_engine(url: str) -> Engine:
    """An engine for `url` (sqlite:///path or postgresql://...), configured for concurrent use."""
    url = normalize_url(url)
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise InvalidArgument(f"database URL is not valid ({exc}); use sqlite:///PATH or postgresql://...") from exc
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(url, parsed.database)
    if parsed.get_backend_name() == "postgresql":
        return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=10)
    raise InvalidArgument(f"unsupported database '{parsed.get_backend_name()}'; use sqlite or postgresql")


def private_sqlite_file(path: Path) -> None:
    """Make `path` an owner-only SQLite file before SQLite opens it: its directory 0700 when made here, the file
    created 0600 (SQLite's own default is 0644 less the umask, and it gives -wal/-shm/-journal the database
    file's mode), and a file or side file an older start left readable by others tightened to owner-only.

    The registry's database holds servers' environment in clear; the runtime's and scheduler's hold tokens.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    for file in (path, *(path.with_name(path.name + suffix) for suffix in SQLITE_SIDE_FILES)):
        try:
            mode = stat.S_IMODE(file.stat().st_mode)
            if mode & 0o077:
                file.chmod(mode & 0o700)
        except FileNotFoundError:
            continue
        except OSError as exc:  # not the owner: say so, the database still opens
            log.warning("cannot make %s owner-only (%s); run `chmod 600 %s`", file, exc, file)


def _sqlite_engine(url: str, database: str | None) -> Engine:
    if database and database != ":memory:" and not database.startswith("file:"):
        private_sqlite_file(Path(database).expanduser())
    # gRPC serves calls from a thread pool, so connections cross threads.
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Take transaction control from the driver so BEGIN IMMEDIATE can be issued below.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        # A write transaction takes the lock up front: a deferred one that later upgrades fails
        # at once with "database is locked" when another writer committed meanwhile (WAL snapshot).
        immediate = conn.get_execution_options().get(WRITE_OPTION, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


class Database:
    """Sessions over one engine: `read()` for queries, `write()` for one all-or-nothing transaction."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.write_engine = engine.execution_options(**{WRITE_OPTION: True})
        self._reader = sessionmaker(engine, expire_on_commit=False)
        self._writer = sessionmaker(self.write_engine, expire_on_commit=False)

    @classmethod
    def from_url(cls, url: str) -> Database:
        return cls(create_db_engine(url))

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def read(self) -> Iterator[Session]:
        with _translate_errors(self.dialect), self._reader() as session:
            yield session

    @contextmanager
    def write(self) -> Iterator[Session]:
        """Commit when the block ends normally; roll everything back when it raises."""
        with _translate_errors(self.dialect), self._writer.begin() as session:
            yield session

    def close(self) -> None:
        self.engine.dispose()


@contextmanager
def _translate_errors(dialect: str) -> Iterator[None]:
    try:
        yield
    except IntegrityError as exc:
        # Checks before each write catch the usual cases; this is a concurrent writer winning a race.
        raise AlreadyExists(
            f"the change conflicts with a concurrent one ({_first_line(exc.orig)}); read the current state and retry"
        ) from exc
    except OperationalError as exc:
        raise Unavailable(f"the {dialect} database is unavailable: {_first_line(exc.orig)}") from exc


def _first_line(error: BaseException | None) -> str:
    return str(error).strip().splitlines()[0] if error is not None and str(error).strip() else "no details"
