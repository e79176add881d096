"""Fixtures for registry unit tests: a real registry on a temporary SQLite file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jarvis.registry.app import Registry
from jarvis.registry.server import open_registry
from jarvis.registry.settings import RegistrySettings


@pytest.fixture
def settings(tmp_path: Path) -> RegistrySettings:
    return RegistrySettings(
        data_dir=tmp_path / "data",
        home=tmp_path / "home",
        database_url=f"sqlite:///{tmp_path / 'registry.db'}",
    )


@pytest.fixture
def registry(settings: RegistrySettings) -> Iterator[Registry]:
    opened = open_registry(settings)
    yield opened
    opened.close()
