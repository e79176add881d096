"""Schema migrations of the registry (Alembic); the scripts ship inside the package."""

from __future__ import annotations

from sqlalchemy import Engine

from jarvis.common.sql.migrate import Migrations

# Any constant works; it only has to be the same for every registry replica.
MIGRATIONS = Migrations("jarvis.registry:migrations", lock_key=0x4A415256)  # "JARV"


def head_revision() -> str:
    return MIGRATIONS.head_revision()


def current_revision(engine: Engine) -> str | None:
    return MIGRATIONS.current_revision(engine)


def upgrade_to_head(engine: Engine) -> tuple[str | None, str]:
    """Bring the schema to the newest revision; returns (revision before, revision after)."""
    return MIGRATIONS.upgrade_to_head(engine)
