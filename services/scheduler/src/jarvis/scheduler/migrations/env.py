"""Alembic environment: always run programmatically with a connection from storage.migrate."""

from __future__ import annotations

from jarvis.common.sql.migrate import run_env
from jarvis.scheduler.storage.models import Base

run_env(Base.metadata)
