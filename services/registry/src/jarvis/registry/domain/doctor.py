"""Health checks a person runs when something is off: config, database, schema, catalog, data dir modes."""

from __future__ import annotations

import shlex
import stat
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from jarvis.common.errors import JarvisError
from jarvis.registry.domain.catalog.store import Catalog
from jarvis.registry.domain.config.migrate import CURRENT_VERSION
from jarvis.registry.domain.config.store import ConfigFile
from jarvis.registry.storage.database import Database
from jarvis.registry.storage.migrate import current_revision, head_revision


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


# The check whose failure is a warning: Jarvis works, but other local users may read what it keeps.
DATA_DIR_CHECK = "data_dir"
# Where `jarvis up` keeps the runtime's and the scheduler's data, inside the registry's data dir.
EMBEDDED_SUBDIRS = ("runtime", "scheduler")
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def doctor(db: Database, catalog: Catalog, config: ConfigFile, data_dir: Path | None = None) -> list[Check]:
    checks = [_config(config), _database(db), _migrations(db), _catalog(catalog)]
    return checks if data_dir is None else [*checks, data_dir_modes(data_dir, db)]


def data_dir_modes(data_dir: Path, db: Database | None = None) -> Check:
    """Whether the data dir and its SQLite databases (with `jarvis up`'s runtime and scheduler dirs in it) are
    the owner's alone: the registry's database holds servers' environment in clear. Each path open to other
    users is named with the command that closes it."""
    if not data_dir.is_dir():
        return Check(DATA_DIR_CHECK, True, f"{data_dir} does not exist yet; Jarvis makes it owner-only (0700)")
    directories = [data_dir, *(d for d in (data_dir / name for name in EMBEDDED_SUBDIRS) if d.is_dir())]
    databases = {db for d in directories for db in d.glob("*.db")}
    if db is not None and db.dialect == "sqlite" and db.engine.url.database not in (None, "", ":memory:"):
        databases.add(Path(str(db.engine.url.database)).expanduser())
    files = sorted(Path(f"{database}{suffix}") for database in databases for suffix in ("", *SQLITE_SIDE_FILES))
    problems = [
        f"{path} is readable by others (mode {oct(mode)}): run `chmod {fix} {shlex.quote(str(path))}`"
        for paths, fix in ((directories, "700"), (files, "600"))
        for path in paths
        if (mode := _mode(path)) is not None and mode & 0o077
    ]
    if problems:
        return Check(DATA_DIR_CHECK, False, "; ".join(problems))
    return Check(DATA_DIR_CHECK, True, f"{data_dir} and its databases are owner-only")


def _mode(path: Path) -> int | None:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None


def _config(config: ConfigFile) -> Check:
    if not config.exists():
        return Check("config", True, f"no file at {config.path}; defaults apply (Bootstrap writes one)")
    try:
        version = config.version()
        config.list()
    except JarvisError as exc:
        return Check("config", False, exc.message)
    if version != CURRENT_VERSION:
        return Check("config", False, f"{config.path} is version {version}; run MigrateConfig to upgrade it")
    return Check("config", True, f"{config.path} is valid (version {version})")


def _database(db: Database) -> Check:
    where = db.engine.url.render_as_string(hide_password=True)
    try:
        with db.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        return Check("database", False, f"{db.dialect} database at {where} is unreachable: {reason}")
    return Check("database", True, f"{db.dialect} database at {where} is reachable")


def _migrations(db: Database) -> Check:
    try:
        current = current_revision(db.engine)
    except SQLAlchemyError:
        return Check("migrations", False, "cannot read the schema revision (see the database check)")
    head = head_revision()
    if current != head:
        return Check("migrations", False, f"schema at revision {current or 'none'}, newest is {head}; run Bootstrap")
    return Check("migrations", True, f"schema at newest revision {head}")


def _catalog(catalog: Catalog) -> Check:
    try:
        count = catalog.count()
    except JarvisError as exc:
        return Check("catalog", False, exc.message)
    if count == 0:
        return Check("catalog", False, "catalog is empty; run Bootstrap to load the bundled entries")
    return Check("catalog", True, f"{count} entries")
