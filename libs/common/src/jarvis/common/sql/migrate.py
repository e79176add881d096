"""Alembic migrations run programmatically; each service ships its scripts inside its package.

A process whose schema is already at the newest revision never imports Alembic (a third of a CLI command's start,
issue 46 item 2): the newest revision is read from the scripts' `revision`/`down_revision` lines and the current one
from the version table with one SELECT. Anything the quick reading cannot tell for sure (a merge, a branch, a script
it cannot read, several rows in the version table) is left to Alembic.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine, MetaData, inspect, text

from jarvis.common.sql.database import WRITE_OPTION, Database

if TYPE_CHECKING:
    from alembic.config import Config

_REVISION = re.compile(r"^revision(?:\s*:\s*str)?\s*=\s*[\"']([^\"']+)[\"']\s*$", re.MULTILINE)
_DOWN_REVISION = re.compile(
    r"^down_revision(?:\s*:[^=]+)?\s*=\s*(?:None|[\"']([^\"']+)[\"'])\s*$",
    re.MULTILINE,
)
_ANY_DOWN_REVISION = re.compile(r"^down_revision\b", re.MULTILINE)


def scripts_head(versions: Path) -> str | None:
    """The one head of the linear history in `versions` (Alembic scripts), or None when that is not plain."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for script in sorted(versions.glob("*.py")):
        try:
            source = script.read_text()
        except (OSError, UnicodeDecodeError):
            return None
        revision = _REVISION.findall(source)
        down = _DOWN_REVISION.findall(source)
        if len(revision) != 1 or len(down) != 1 or len(_ANY_DOWN_REVISION.findall(source)) != 1:
            return None  # a tuple (merge), an annotation or layout not read here: Alembic tells
        if revision[0] in revisions:
            return None
        revisions.add(revision[0])
        if down[0]:
            parents.add(down[0])
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 and parents <= revisions else None


class Migrations:
    """One service's migration scripts and the table that records which ran.

    Services sharing one database keep separate `version_table`s, so their histories never mix.
    `lock_key` serialises replicas migrating the same PostgreSQL database at once.
    """

    def __init__(self, script_location: str, lock_key: int, version_table: str = "alembic_version") -> None:
        self.script_location = script_location
        self.lock_key = lock_key
        self.version_table = version_table

    def _config(self) -> Config:
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", self.script_location)
        config.attributes["version_table"] = self.version_table
        return config

    def head_revision(self) -> str:
        quick = self._scripts_head()
        if quick is not None:
            return quick
        from alembic.script import ScriptDirectory

        head = ScriptDirectory.from_config(self._config()).get_current_head()
        assert head is not None
        return str(head)

    def _scripts_head(self) -> str | None:
        """The head read from the scripts' own lines (None: ask Alembic)."""
        package, _, directory = self.script_location.partition(":")
        return _package_scripts_head(package, directory) if directory else None

    def current_revision(self, engine: Engine) -> str | None:
        with engine.connect() as conn:
            if not inspect(conn).has_table(self.version_table):
                return None
            rows = conn.execute(text(f"SELECT version_num FROM {self.version_table}")).scalars().all()  # noqa: S608
            if len(rows) <= 1:
                return str(rows[0]) if rows else None
            from alembic.runtime.migration import MigrationContext

            context = MigrationContext.configure(conn, opts={"version_table": self.version_table})
            revision = context.get_current_revision()  # several heads: Alembic's own error
        return None if revision is None else str(revision)

    def open_database(self, url: str) -> Database:
        """A database at `url` with this service's schema at the newest revision."""
        db = Database.from_url(url)
        try:
            self.upgrade_to_head(db.engine)
        except BaseException:
            db.close()
            raise
        return db

    def upgrade_to_head(self, engine: Engine) -> tuple[str | None, str]:
        """Bring the schema to the newest revision; returns (revision before, revision after)."""
        before = self.current_revision(engine)
        head = self.head_revision()
        if before == head:
            return before, head
        write_engine = engine.execution_options(**{WRITE_OPTION: True})
        with write_engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                # Replicas starting together must not run the same DDL twice; the lock ends with the transaction.
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": self.lock_key})
            from alembic import command

            config = self._config()
            config.attributes["connection"] = conn
            command.upgrade(config, "head")
        return before, head


def run_env(metadata: MetaData) -> None:
    """The body of every service's Alembic `env.py`: migrate on the connection `upgrade_to_head` passes."""
    from alembic import context

    connection = context.config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("run migrations through Migrations.upgrade_to_head(engine)")
    context.configure(
        connection=connection,
        target_metadata=metadata,
        version_table=context.config.attributes.get("version_table", "alembic_version"),
        # SQLite cannot ALTER most things; batch mode recreates tables for it.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


@functools.cache
def _package_scripts_head(package: str, directory: str) -> str | None:
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    versions = [Path(location) / directory / "versions" for location in locations]
    return scripts_head(versions[0]) if len(versions) == 1 and versions[0].is_dir() else None
