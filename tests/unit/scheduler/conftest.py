"""Fixtures of the scheduler's domain on a real SQLite database (migrated), with a clock the test drives."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from jarvis.common.sql.database import Database
from jarvis.scheduler.domain.beat import Beat
from jarvis.scheduler.domain.schedules import Schedules
from jarvis.scheduler.storage.migrate import MIGRATIONS
from tests.unit.scheduler.scheduler_doubles import START, Clock, KnownProjects, RecordingDispatcher, make_beat


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'scheduler.db'}"


@pytest.fixture
def open_db(database_url: str) -> Iterator[Callable[[], Database]]:
    """Opens (migrated) connections to the one test database, as separate processes would."""
    opened: list[Database] = []

    def open_one() -> Database:
        db = Database.from_url(database_url)
        opened.append(db)
        MIGRATIONS.upgrade_to_head(db.engine)
        return db

    yield open_one
    for db in opened:
        db.close()


@pytest.fixture
def db(open_db: Callable[[], Database]) -> Database:
    return open_db()


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def dispatcher() -> RecordingDispatcher:
    return RecordingDispatcher()


@pytest.fixture
def schedules(db: Database, dispatcher: RecordingDispatcher, clock: Clock) -> Schedules:
    return Schedules(db, KnownProjects(), dispatcher, min_interval_seconds=60, clock=clock)


@pytest.fixture
def beat(db: Database, dispatcher: RecordingDispatcher, clock: Clock) -> Beat:
    return make_beat(db, dispatcher, clock)
