"""The runtime's and the scheduler's migrations build exactly the schema their ORM models describe."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import MetaData

from jarvis.common.sql.database import Database
from jarvis.common.sql.migrate import Migrations
from jarvis.runtime.storage.migrate import MIGRATIONS as RUNTIME_MIGRATIONS
from jarvis.runtime.storage.models import Base as RuntimeBase
from jarvis.scheduler.storage.migrate import MIGRATIONS as SCHEDULER_MIGRATIONS
from jarvis.scheduler.storage.models import Base as SchedulerBase
from tests.support.postgres import fresh_postgres_url

SERVICES = {
    "runtime": (RUNTIME_MIGRATIONS, RuntimeBase.metadata),
    "scheduler": (SCHEDULER_MIGRATIONS, SchedulerBase.metadata),
}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'service.db'}"
        return
    with fresh_postgres_url() as url:
        yield url


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_migrations_build_the_model_schema(service: str, database_url: str) -> None:
    migrations, metadata = SERVICES[service]
    _check(migrations, metadata, database_url)


def _check(migrations: Migrations, metadata: MetaData, database_url: str) -> None:
    db = Database.from_url(database_url)
    try:
        assert migrations.upgrade_to_head(db.engine) == (None, migrations.head_revision())
        assert migrations.upgrade_to_head(db.engine) == (migrations.head_revision(), migrations.head_revision())
        with db.engine.connect() as conn:
            context = MigrationContext.configure(
                conn, opts={"compare_type": True, "version_table": migrations.version_table}
            )
            assert compare_metadata(context, metadata) == []
    finally:
        db.close()
