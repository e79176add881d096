"""analyze() on real project trees: languages, frameworks, package managers, configs, git."""

from __future__ import annotations

import os
from pathlib import Path

from jarvis.registry.domain.project import analyze
from tests.unit.project.project_support import Git, write


def test_python_project(python_project: Path) -> None:
    report = analyze(python_project)

    assert report.path == python_project.resolve()
    assert report.languages[0] == "python"
    # .venv, node_modules and __pycache__ are skipped: 5 .py files of the project's own.
    assert report.file_counts == {"python": 5, "shell": 1}
    assert report.frameworks[:2] == ("fastapi", "sqlalchemy")
    assert "docker" in report.frameworks
    assert report.test_frameworks == ("pytest",)
    assert report.package_managers == ("uv",)
    for config in (
        "pyproject.toml [tool.pytest]",
        ".pre-commit-config.yaml",
        ".github/workflows/ci.yml",
        "Dockerfile",
        "Makefile",
    ):
        assert config in report.configs
    assert {d.name for d in report.dependencies} >= {"fastapi", "uvicorn", "sqlalchemy", "psycopg", "pytest"}
    assert all(d.source == "pyproject.toml" for d in report.dependencies)
    assert not report.is_git_repo
    assert report.git_branch == ""
    assert not report.walk_truncated
    assert report.notes == ()


def test_node_project(node_project: Path) -> None:
    report = analyze(node_project)

    assert report.languages == ("typescript", "javascript")
    assert report.file_counts == {"typescript": 3, "javascript": 1}
    assert set(report.frameworks) == {"react", "next", "express", "vite"}
    assert report.test_frameworks == ("jest",)
    assert report.package_managers == ("pnpm",)
    assert {".eslintrc.json", "tsconfig.json"} <= set(report.configs)


def test_go_project(go_project: Path) -> None:
    report = analyze(go_project)

    assert report.languages == ("go",)
    assert report.file_counts == {"go": 3}
    assert report.frameworks == ("gin",)
    assert report.package_managers == ("go modules",)
    assert set(report.test_frameworks) == {"testify", "go test"}
    # The /v5 major-version suffix is dropped so pgx is recognised whatever its version.
    assert "github.com/jackc/pgx" in {d.name for d in report.dependencies}


def test_mixed_project_reads_nested_manifests(mixed_project: Path) -> None:
    report = analyze(mixed_project)

    assert report.languages[0] == "python"
    assert set(report.languages) == {"python", "javascript", "vue"}
    assert set(report.frameworks) == {"django", "vue", "docker"}
    assert set(report.test_frameworks) == {"pytest", "vitest"}
    assert set(report.package_managers) == {"yarn", "pip"}
    assert {".gitlab-ci.yml", "docker-compose.yml"} <= set(report.configs)
    sources = {(d.name, d.source) for d in report.dependencies}
    assert ("psycopg2-binary", "backend/pyproject.toml") in sources
    assert ("pytest", "backend/requirements-dev.txt") in sources
    assert ("postgres", "docker-compose.yml") in sources
    assert ("redis", "docker-compose.yml") in sources


def test_walk_stops_at_the_file_limit_and_says_so(tmp_path: Path) -> None:
    write(tmp_path, {f"m{i:02}.py": "" for i in range(30)})

    report = analyze(tmp_path, max_files=10)

    assert report.walk_truncated
    assert report.files_scanned == 10
    assert report.file_counts == {"python": 10}
    assert "stopped after 10 files" in report.notes[0]


def test_symlinks_out_of_the_project_are_not_followed(tmp_path: Path) -> None:
    outside = write(tmp_path / "outside", {f"lib{i}.py": "" for i in range(5)})
    write(outside, {"package.json": '{"dependencies": {"react": "18"}}'})
    project = write(tmp_path / "project", {"main.go": "package main\n"})
    os.symlink(outside, project / "linked")
    os.symlink(outside / "package.json", project / "package.json")

    report = analyze(project)

    assert report.file_counts == {"go": 1}
    assert report.dependencies == ()  # the symlinked manifest points outside: not read


def test_broken_manifest_is_reported_not_fatal(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "[project\nname=", "package.json": "{not json", "a.py": ""})

    report = analyze(tmp_path)

    assert report.languages == ("python",)
    assert any("pyproject.toml could not be parsed" in note for note in report.notes)
    assert any("package.json could not be parsed" in note for note in report.notes)


def test_git_repository_and_branch(repo: Path, git: Git) -> None:
    git(repo, "checkout", "-q", "-b", "feature/x")

    report = analyze(repo)

    assert report.is_git_repo
    assert report.git_branch == "feature/x"
    assert analyze(repo / ".git").is_git_repo is False  # inside .git is not a work tree


def test_poetry_and_requirements_sources(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": (
                '[tool.poetry]\nname = "x"\n[tool.poetry.dependencies]\npython = "^3.11"\nFlask = "^3"\n'
                '[tool.poetry.group.test.dependencies]\nhypothesis = "*"\n[tool.ruff]\nline-length = 90\n'
            ),
            "poetry.lock": "",
            "setup.cfg": "[flake8]\nmax-line-length = 90\n",
        },
    )

    report = analyze(tmp_path)

    assert report.frameworks == ("flask",)
    assert report.test_frameworks == ("hypothesis",)
    assert report.package_managers == ("poetry",)
    assert {"pyproject.toml [tool.ruff]", "setup.cfg [flake8]"} <= set(report.configs)
    assert "python" not in {d.name for d in report.dependencies}
