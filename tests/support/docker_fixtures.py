"""Session fixtures for tests on the real Docker engine; created only when a test asks for them."""

from __future__ import annotations

import docker
import pytest

from tests.support.docker_env import agent_image, docker_client, preset_image


@pytest.fixture(scope="session")
def engine() -> docker.DockerClient:
    return docker_client()


@pytest.fixture(scope="session")
def image(engine: docker.DockerClient) -> str:
    return agent_image(engine)


@pytest.fixture(scope="session")
def presets_image(engine: docker.DockerClient) -> str:
    return preset_image(engine)
