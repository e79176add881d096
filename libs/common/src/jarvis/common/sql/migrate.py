"""Alembic migrations run programmatically; each service ships its scripts inside its package."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, MetaData, text

from jarvis.common.sql.database import WRITE_OPTION, Database


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
        config = Config()
        config.set_main_option("script_location", self.script_location)
        config.attributes["version_table"] = self.version_table
        return config

    def head_revision(self) -> str:
        head = ScriptDirectory.from_config(self._config()).get_current_head()
        assert head is not None
        return str(head)

    def current_revision(self, engine: Engine) -> str | None:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"version_table": self.version_table})
            revision = context.get_current_revision()
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
