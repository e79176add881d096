"""Fixtures: a scaffolded sample project per module, and an MCP client to its server over stdio."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from tests.support.projectserver import make_project, server_parameters


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("project"))


@pytest.fixture(scope="module")
async def client(project: Path) -> AsyncIterator[Client]:
    async with Client(server_parameters(project), mode="legacy") as connected:
        yield connected
