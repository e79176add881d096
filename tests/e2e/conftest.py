"""Fixtures that start real `jarvis up` processes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.downstream import FAST_ENV
from tests.support.stack import RunningJarvis, start_jarvis


@pytest.fixture(scope="module")
def jarvis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    """Embedded Jarvis on loopback with default settings (no token needed); projects anywhere in pytest's temp dir."""
    running = start_jarvis(
        tmp_path_factory.mktemp("jarvis"),
        env={"HOME": str(tmp_path_factory.mktemp("home")), **project_roots(tmp_path_factory)},
    )
    yield running
    running.stop()


def project_roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """JARVIS_PROJECT_ROOTS covering every test's tmp_path (projects are made there, not under HOME)."""
    return {"JARVIS_PROJECT_ROOTS": json.dumps([str(tmp_path_factory.getbasetemp())])}


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    """Embedded Jarvis that requires tokens, with a 1-second token cache so revocation shows quickly."""
    home = tmp_path_factory.mktemp("home")
    running = start_jarvis(
        tmp_path_factory.mktemp("secured"),
        "--require-auth",
        env={"HOME": str(home), "JARVIS_AGGREGATOR_TOKEN_CACHE_SECONDS": "1"},
    )
    yield running
    running.stop()


@pytest.fixture(scope="module")
def hosted(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    """Embedded Jarvis hosting downstream servers with quick timeouts (FAST_ENV), one per test module. A module
    adds `jarvis up` arguments in HOSTED_ARGS and environment in HOSTED_ENV."""
    module = request.module
    env = {"HOME": str(tmp_path_factory.mktemp("home")), **FAST_ENV, **getattr(module, "HOSTED_ENV", {})}
    data = tmp_path_factory.mktemp(module.__name__.rpartition(".")[2])
    running = start_jarvis(data, *getattr(module, "HOSTED_ARGS", ()), env=env)
    yield running
    running.stop()
    print(running.log()[-6000:])  # shown with a failing test's output


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    """A small real Python project in a git repository with one commit."""
    import subprocess

    root = tmp_path / "proj"
    (root / "src" / "app").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "app"\nversion = "0.1.0"\ndependencies = ["fastapi", "sqlalchemy", "psycopg"]\n'
        '[project.optional-dependencies]\ntest = ["pytest"]\n'
    )
    (root / "src" / "app" / "__init__.py").write_text("VALUE = 1\n")
    (root / "src" / "app" / "main.py").write_text("from fastapi import FastAPI\napp = FastAPI()\n")
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
    }
    for argv in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-qm", "init"]):
        subprocess.run(argv, cwd=root, env=env, check=True)
    return root
