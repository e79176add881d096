"""Migrations on both databases: the migrated schema is exactly what the ORM models describe."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from jarvis.registry.storage.database import Database
from jarvis.registry.storage.migrate import current_revision, head_revision, upgrade_to_head
from jarvis.registry.storage.models import Base


def test_migrations_build_the_model_schema(database_url: str) -> None:
    db = Database.from_url(database_url)
    try:
        assert current_revision(db.engine) is None
        assert upgrade_to_head(db.engine) == (None, head_revision())
        assert upgrade_to_head(db.engine) == (head_revision(), head_revision())
        with db.engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            assert compare_metadata(context, Base.metadata) == []
    finally:
        db.close()
