"""Schema migrations of the scheduler (Alembic); its own version table, so it may share a database."""

from __future__ import annotations

from jarvis.common.sql.migrate import Migrations

MIGRATIONS = Migrations(
    "jarvis.scheduler:migrations",
    lock_key=0x4A534348,  # "JSCH"
    version_table="scheduler_alembic_version",
)
