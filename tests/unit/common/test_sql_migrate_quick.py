"""A schema already at its newest revision is recognised without Alembic (issue 46 item 2), and gives the answers
Alembic gives; a history the quick reading cannot be sure of is left to Alembic."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text

from jarvis.common.sql.database import Database
from jarvis.common.sql.migrate import Migrations, scripts_head
from jarvis.registry.storage.migrate import MIGRATIONS as REGISTRY
from jarvis.runtime.storage.migrate import MIGRATIONS as RUNTIME
from jarvis.scheduler.storage.migrate import MIGRATIONS as SCHEDULER

SERVICES = {"registry": REGISTRY, "runtime": RUNTIME, "scheduler": SCHEDULER}

SCRIPT = '''"""{doc}"""
revision = {revision}
down_revision = {down}
branch_labels = None
depends_on = None
'''


def write(versions: Path, name: str, revision: str, down: str) -> None:
    (versions / f"{name}.py").write_text(SCRIPT.format(doc=name, revision=revision, down=down))


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_the_head_read_from_the_scripts_is_alembics(service: str) -> None:
    migrations = SERVICES[service]
    quick = migrations._scripts_head()
    assert quick is not None, f"{service}'s scripts are not read quickly: every start imports Alembic"
    assert quick == ScriptDirectory.from_config(migrations._config()).get_current_head()


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_the_current_revision_is_alembics(service: str, tmp_path: Path) -> None:
    migrations = SERVICES[service]
    db = Database.from_url(f"sqlite:///{tmp_path / 'service.db'}")
    try:
        assert migrations.current_revision(db.engine) is None  # no version table yet
        assert migrations.upgrade_to_head(db.engine) == (None, migrations.head_revision())
        with db.engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"version_table": migrations.version_table})
            assert migrations.current_revision(db.engine) == context.get_current_revision()
        assert migrations.upgrade_to_head(db.engine) == (migrations.head_revision(), migrations.head_revision())
    finally:
        db.close()


def test_a_linear_history_has_one_head(tmp_path: Path) -> None:
    write(tmp_path, "a", '"0001"', "None")
    write(tmp_path, "b", '"0002"', '"0001"')
    write(tmp_path, "c", "'0003'", "'0002'")
    assert scripts_head(tmp_path) == "0003"


@pytest.mark.parametrize(
    ("scripts", "why"),
    [
        ([("a", '"0001"', "None"), ("b", '"0002"', '"0001"'), ("c", '"0003"', '"0001"')], "two heads: a branch"),
        ([("a", '"0001"', "None"), ("b", '"0002"', "None"), ("m", '"0003"', '("0001", "0002")')], "a merge"),
        ([("a", '"0001"', "None"), ("b", '"0002"', '"0009"')], "a parent no script names"),
        ([("a", '"0001"', "None"), ("b", '"0001"', "None")], "one revision twice"),
        ([("a", "REVISION", "None")], "a revision that is not a literal"),
        ([], "no scripts"),
    ],
)
def test_a_history_not_plain_is_left_to_alembic(tmp_path: Path, scripts: list[tuple[str, str, str]], why: str) -> None:
    for name, revision, down in scripts:
        write(tmp_path, name, revision, down)
    assert scripts_head(tmp_path) is None, why


def test_several_rows_in_the_version_table_get_alembics_own_error(tmp_path: Path) -> None:
    migrations = Migrations("jarvis.registry:migrations", lock_key=1)
    db = Database.from_url(f"sqlite:///{tmp_path / 'two.db'}")
    try:
        with db.engine.begin() as conn:
            conn.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
            conn.execute(text("INSERT INTO alembic_version VALUES ('0001'), ('0002')"))
        with pytest.raises(Exception, match="more than one head"):
            migrations.current_revision(db.engine)
    finally:
        db.close()
