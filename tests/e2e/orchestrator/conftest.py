"""`jarvis up` processes whose runtime drives the test Docker engine with the fake-agent image."""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import docker
import pytest

from tests.support.docker_env import docker_host, git_available, remove_managed
from tests.support.git_env import BARE_GIT_ENV
from tests.support.stack import RunningJarvis, start_jarvis


def runtime_env(image: str, home: Path, **extra: str) -> dict[str, str]:
    return {
        "HOME": str(home),
        "DOCKER_HOST": docker_host(),
        "JARVIS_RUNTIME_IMAGE": image,
        "JARVIS_RUNTIME_AGENT_COMMAND": '["fake-agent"]',
        "JARVIS_RUNTIME_SESSION_END_GRACE_SECONDS": "2",
        # Source repositories are made in tmp_path, not under HOME.
        "JARVIS_PROJECT_ROOTS": json.dumps([tempfile.gettempdir()]),
        **extra,
    }


@contextmanager
def jarvis_with_runtime(
    tmp_path_factory: pytest.TempPathFactory, image: str, engine: docker.DockerClient, name: str
) -> Iterator[RunningJarvis]:
    """A `jarvis up` whose runtime drives the test engine with `image`; its containers are removed after it."""
    data = tmp_path_factory.mktemp(name)
    running = start_jarvis(data, env=runtime_env(image, tmp_path_factory.mktemp("home")))
    try:
        yield running
    finally:
        running.stop()
        remove_managed(engine, data)


@pytest.fixture(scope="module")
def orchestrator(
    tmp_path_factory: pytest.TempPathFactory, image: str, engine: docker.DockerClient
) -> Iterator[RunningJarvis]:
    with jarvis_with_runtime(tmp_path_factory, image, engine, "orchestrator") as running:
        yield running


@pytest.fixture
def source(tmp_path: Path) -> Path:
    git = git_available()
    root = tmp_path / "source"
    root.mkdir()
    (root / "README.md").write_text("hello\n")
    (root / "Makefile").write_text("test:\n\techo ok\n")
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run([git, *argv], cwd=root, env=BARE_GIT_ENV, check=True)
    return root
