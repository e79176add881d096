"""Alembic environment: always run programmatically with a connection from storage.migrate."""

from __future__ import annotations

from alembic import context

from jarvis.registry.storage.models import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through jarvis.registry.storage.migrate.upgrade_to_head(engine)")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    # SQLite cannot ALTER most things; batch mode recreates tables for it.
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
