"""`jarvis migrate` (the Kubernetes migration Job) on a real PostgreSQL: every schema once, then nothing to do."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect

from tests.support.postgres import fresh_postgres_url
from tests.support.stack import free_port

pytestmark = pytest.mark.postgres


@pytest.fixture
def database_url() -> Iterator[str]:
    with fresh_postgres_url() as url:
        yield url


def _migrate(url: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "JARVIS_REGISTRY_DATA_DIR": str(tmp_path),
        "JARVIS_RUNTIME_DATA_DIR": str(tmp_path),
        "JARVIS_SCHEDULER_DATA_DIR": str(tmp_path),
    }
    return subprocess.run(
        [sys.executable, "-m", "jarvis.cli", "migrate"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_migrate_builds_every_schema_once(database_url: str, tmp_path: Path) -> None:
    first = _migrate(database_url, tmp_path)
    assert first.returncode == 0, first.stderr
    assert [line.split(":")[0] for line in first.stdout.splitlines()] == ["registry", "runtime", "scheduler"]
    assert all("empty ->" in line for line in first.stdout.splitlines())
    engine = create_engine(database_url)
    try:
        tables = set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
    assert {
        "alembic_version",
        "runtime_alembic_version",
        "scheduler_alembic_version",
        "tokens",
        "runtime_projects",
        "scheduler_runs",
    } <= tables
    again = _migrate(database_url, tmp_path)
    assert again.returncode == 0, again.stderr
    assert all("already at" in line for line in again.stdout.splitlines())


def test_an_unreachable_database_is_named_without_a_traceback(tmp_path: Path) -> None:
    done = _migrate(f"postgresql://jarvis@127.0.0.1:{free_port()}/jarvis?connect_timeout=3", tmp_path)
    assert done.returncode == 1
    assert "registry: cannot migrate the database of DATABASE_URL" in done.stderr
    assert "Traceback" not in done.stderr
