"""Schema migrations (Alembic), run programmatically; the scripts ship inside the package."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text

from jarvis.registry.storage.database import WRITE_OPTION

# Any constant works; it only has to be the same for every registry replica.
_PG_MIGRATION_LOCK = 0x4A415256  # "JARV"


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", "jarvis.registry:migrations")
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return str(head)


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        revision = MigrationContext.configure(conn).get_current_revision()
    return None if revision is None else str(revision)


def upgrade_to_head(engine: Engine) -> tuple[str | None, str]:
    """Bring the schema to the newest revision; returns (revision before, revision after)."""
    before = current_revision(engine)
    head = head_revision()
    if before == head:
        return before, head
    write_engine = engine.execution_options(**{WRITE_OPTION: True})
    with write_engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            # Replicas starting together must not run the same DDL twice; the lock ends with the transaction.
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
        config = _config()
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
    return before, head
