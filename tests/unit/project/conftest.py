"""Real temporary projects and git repositories for the project-domain tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.project.project_support import Git, run_git, write


@pytest.fixture
def git() -> Git:
    """Run git in a directory with a fixed identity; returns stdout."""
    return run_git


@pytest.fixture
def python_project(tmp_path: Path) -> Path:
    root = tmp_path / "shop-api"
    return write(
        root,
        {
            "pyproject.toml": (
                '[project]\nname = "shop-api"\nversion = "0.1.0"\nrequires-python = ">=3.11"\n'
                'dependencies = ["fastapi>=0.110", "uvicorn[standard]", "SQLAlchemy>=2", "psycopg[binary]"]\n'
                '[project.optional-dependencies]\ndev = ["pytest>=8", "pytest-asyncio"]\n'
                '[tool.pytest.ini_options]\naddopts = "-q"\n'
            ),
            "uv.lock": "version = 1\n",
            "src/shop_api/__init__.py": '"""Shop API."""\n',
            "src/shop_api/app.py": "from fastapi import FastAPI\n\napp = FastAPI()\n",
            "src/shop_api/models.py": "X = 1\n",
            "tests/conftest.py": "",
            "tests/test_app.py": "def test_ok() -> None:\n    assert True\n",
            "scripts/run.sh": "#!/bin/sh\necho hi\n",
            # Folders the walk must skip: a virtualenv, caches, dependencies.
            ".venv/lib/site.py": "",
            ".venv/lib/other.py": "",
            "node_modules/x/index.js": "",
            "src/shop_api/__pycache__/app.cpython-311.py": "",
            ".github/workflows/ci.yml": "name: CI\non: [push]\njobs: {}\n",
            ".pre-commit-config.yaml": "repos: []\n",
            "Dockerfile": "FROM python:3.12-slim\n",
            "Makefile": "test:\n\tpytest\n",
        },
    )


@pytest.fixture
def node_project(tmp_path: Path) -> Path:
    root = tmp_path / "web-ui"
    package = {
        "name": "web-ui",
        "version": "1.0.0",
        "dependencies": {"react": "^18", "next": "^14", "express": "^4", "pg": "^8"},
        "devDependencies": {"jest": "^29", "vite": "^5", "typescript": "^5"},
    }
    return write(
        root,
        {
            "package.json": json.dumps(package),
            "pnpm-lock.yaml": "lockfileVersion: '9.0'\n",
            "src/index.ts": "export const a = 1;\n",
            "src/app.tsx": "export {};\n",
            "src/util.ts": "",
            "server.js": "module.exports = {};\n",
            ".eslintrc.json": "{}",
            "tsconfig.json": "{}",
        },
    )


@pytest.fixture
def go_project(tmp_path: Path) -> Path:
    root = tmp_path / "svc"
    return write(
        root,
        {
            "go.mod": (
                "module example.com/svc\n\ngo 1.22\n\nrequire (\n\tgithub.com/gin-gonic/gin v1.9.1\n"
                "\tgithub.com/jackc/pgx/v5 v5.5.0 // indirect\n)\n\n"
                "require github.com/stretchr/testify v1.8.4\n"
            ),
            "main.go": "package main\n\nfunc main() {}\n",
            "main_test.go": "package main\n",
            "internal/db/db.go": "package db\n",
        },
    )


@pytest.fixture
def mixed_project(tmp_path: Path) -> Path:
    root = tmp_path / "Mixed Project"
    return write(
        root,
        {
            "backend/pyproject.toml": '[project]\nname = "b"\ndependencies = ["django", "psycopg2-binary"]\n',
            "backend/requirements-dev.txt": "# dev tools\npytest==8.0\n-r requirements.txt\n",
            "backend/app/views.py": "",
            "backend/app/models.py": "",
            "backend/app/urls.py": "",
            "backend/app/admin.py": "",
            "frontend/package.json": json.dumps({"dependencies": {"vue": "^3"}, "devDependencies": {"vitest": "^1"}}),
            "frontend/yarn.lock": "",
            "frontend/src/main.js": "",
            "frontend/src/App.vue": "",
            "docker-compose.yml": "services:\n  db:\n    image: postgres:16\n  cache:\n    image: 'redis:7'\n",
            ".gitlab-ci.yml": "test:\n  script: [make test]\n",
        },
    )


@pytest.fixture
def repo(tmp_path: Path, git: Git) -> Path:
    """A git repository on branch main with one commit of two files."""
    root = write(tmp_path / "repo", {"README.md": "hello\n", "app.py": "print('one')\n"})
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    return root
