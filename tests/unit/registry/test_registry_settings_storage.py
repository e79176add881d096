"""Settings from the environment, engine URLs, and the migrated schema matching the models."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text

from jarvis.common.errors import InvalidArgument
from jarvis.registry.app import Registry
from jarvis.registry.domain.servers import find_server
from jarvis.registry.settings import RegistrySettings
from jarvis.registry.storage.database import Database, normalize_url
from jarvis.registry.storage.migrate import current_revision, head_revision, upgrade_to_head
from jarvis.registry.storage.models import Base


def test_settings_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("DATABASE_URL", "JARVIS_REGISTRY_DATABASE_URL", "JARVIS_REGISTRY_DATA_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    settings = RegistrySettings()
    assert settings.data_dir == tmp_path / ".jarvis"
    assert settings.database_url == f"sqlite:///{tmp_path / '.jarvis' / 'registry.db'}"
    assert settings.listen == "127.0.0.1:0"


def test_settings_honour_database_url_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JARVIS_REGISTRY_DATABASE_URL", raising=False)
    monkeypatch.setenv("DATABASE_URL", "postgresql://ci@db/jarvis")
    assert RegistrySettings().database_url == "postgresql://ci@db/jarvis"
    monkeypatch.setenv("JARVIS_REGISTRY_DATABASE_URL", "sqlite:////tmp/x.db")
    assert RegistrySettings().database_url == "sqlite:////tmp/x.db"
    monkeypatch.setenv("JARVIS_REGISTRY_DATA_DIR", "/srv/jarvis")
    assert RegistrySettings().config_path == Path("/srv/jarvis/config.json")


@pytest.mark.parametrize("url", ["postgresql://u@h/db", "postgres://u@h/db", "postgresql+psycopg2://u@h/db"])
def test_postgres_urls_use_psycopg3(url: str) -> None:
    assert normalize_url(url) == "postgresql+psycopg://u@h/db"


def test_unsupported_database_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="unsupported database 'mysql'"):
        Database.from_url("mysql://x@y/z")


def test_sqlite_pragmas_and_schema_parity(registry: Registry) -> None:
    with registry.db.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata) == []
    assert current_revision(registry.db.engine) == head_revision()
    assert upgrade_to_head(registry.db.engine) == (head_revision(), head_revision())


def test_failed_write_changes_nothing(registry: Registry) -> None:
    registry.servers.install("time")

    def change_then_fail() -> None:
        with registry.db.write() as session:
            find_server(session, "time").description = "changed"
            session.flush()
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        change_then_fail()
    assert registry.servers.get("time").description != "changed"
