"""Schema migrations of the runtime (Alembic); its own version table, so it may share a database."""

from __future__ import annotations

from jarvis.common.sql.migrate import Migrations

MIGRATIONS = Migrations(
    "jarvis.runtime:migrations",
    lock_key=0x4A52544D,  # "JRTM"
    version_table="runtime_alembic_version",
)
