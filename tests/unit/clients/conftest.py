"""Fixtures for client-config tests: a temporary home with real sample configs copied in."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from jarvis.registry.domain.clients import ClientManager
from tests.unit.clients.clients_support import AGGREGATOR, LINUX_CONFIGS, SAMPLES, Install


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    """The PATH the manager looks for clients' commands on: empty unless a test puts one there."""
    path = tmp_path / "bin"
    path.mkdir()
    return path


@pytest.fixture
def manager(home: Path, data_dir: Path, bin_dir: Path) -> ClientManager:
    return ClientManager(data_dir, home, AGGREGATOR, platform="linux", search_path=str(bin_dir))


@pytest.fixture
def install(home: Path) -> Install:
    """Copy a client's sample (or another sample) to where that client keeps its config."""

    def _install(client: str, sample: str | None = None) -> Path:
        relative, default_sample = LINUX_CONFIGS[client]
        target = home / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SAMPLES / (sample or default_sample), target)
        if client == "claude-code":
            (home / ".claude").mkdir(exist_ok=True)
        return target

    return _install
