"""`jarvis up` processes whose runtime drives the test Docker engine with the fake-agent image."""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterator
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


@pytest.fixture(scope="module")
def orchestrator(
    tmp_path_factory: pytest.TempPathFactory, image: str, engine: docker.DockerClient
) -> Iterator[RunningJarvis]:
    data = tmp_path_factory.mktemp("orchestrator")
    running = start_jarvis(data, env=runtime_env(image, tmp_path_factory.mktemp("home")))
    yield running
    running.stop()
    remove_managed(engine, data)


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
