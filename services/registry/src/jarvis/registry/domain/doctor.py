"""Health checks a person runs when something is off: config, database, schema, catalog."""

from __future__ import annotations

from dataclasses import dataclass

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


def doctor(db: Database, catalog: Catalog, config: ConfigFile) -> list[Check]:
    return [_config(config), _database(db), _migrations(db), _catalog(catalog)]


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
