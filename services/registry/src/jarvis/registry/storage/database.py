"""The registry's database access; the engine and transaction rules are shared (jarvis.common.sql)."""

from __future__ import annotations

from jarvis.common.sql.database import WRITE_OPTION, Database, create_db_engine, normalize_url

__all__ = ["WRITE_OPTION", "Database", "create_db_engine", "normalize_url"]
