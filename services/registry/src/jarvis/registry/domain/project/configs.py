"""Find the lint, format, type-check, hook, CI and container configs at a project's root."""

from __future__ import annotations

import configparser
import tomllib
from pathlib import Path

from jarvis.registry.domain.project.paths import is_inside, read_text_inside

CONFIG_FILES = (
    # Python
    "ruff.toml",
    ".ruff.toml",
    ".flake8",
    "mypy.ini",
    ".mypy.ini",
    ".pylintrc",
    "pylintrc",
    "pyrightconfig.json",
    "pytest.ini",
    "tox.ini",
    "noxfile.py",
    # JavaScript / TypeScript
    ".eslintrc",
    ".eslintrc.js",
    ".eslintrc.cjs",
    ".eslintrc.json",
    ".eslintrc.yml",
    ".eslintrc.yaml",
    "eslint.config.js",
    "eslint.config.mjs",
    "eslint.config.cjs",
    "eslint.config.ts",
    ".prettierrc",
    ".prettierrc.json",
    ".prettierrc.yml",
    ".prettierrc.yaml",
    ".prettierrc.js",
    ".prettierrc.cjs",
    "prettier.config.js",
    "prettier.config.mjs",
    "biome.json",
    "tsconfig.json",
    # Go, Rust, Ruby, PHP
    ".golangci.yml",
    ".golangci.yaml",
    ".golangci.toml",
    ".golangci.json",
    "rustfmt.toml",
    ".rustfmt.toml",
    "clippy.toml",
    ".clippy.toml",
    ".rubocop.yml",
    "phpcs.xml",
    "phpstan.neon",
    # Hooks, CI, dependency bots
    ".pre-commit-config.yaml",
    ".gitlab-ci.yml",
    ".circleci/config.yml",
    "Jenkinsfile",
    "azure-pipelines.yml",
    ".travis.yml",
    "bitbucket-pipelines.yml",
    ".github/dependabot.yml",
    "renovate.json",
    # Containers
    "Dockerfile",
    "docker-compose.yml",
    "docker-compose.yaml",
    "compose.yml",
    "compose.yaml",
    ".dockerignore",
    ".devcontainer/devcontainer.json",
    # Editors and task runners
    ".editorconfig",
    "Makefile",
    "justfile",
    "Taskfile.yml",
)
PYPROJECT_TOOLS = ("ruff", "black", "isort", "mypy", "pylint", "pyright", "pytest")
SETUP_CFG_SECTIONS = ("flake8", "mypy", "tool:pytest", "isort")
WORKFLOW_DIR = ".github/workflows"


def pyproject_tools(root: Path) -> list[str]:
    """Tools that pyproject.toml configures, e.g. ['ruff', 'pytest']."""
    text = read_text_inside(root, "pyproject.toml")
    if text is None:
        return []
    try:
        tool = tomllib.loads(text).get("tool", {})
    except tomllib.TOMLDecodeError:
        return []
    return [name for name in PYPROJECT_TOOLS if isinstance(tool, dict) and name in tool]


def _setup_cfg_sections(root: Path) -> list[str]:
    text = read_text_inside(root, "setup.cfg")
    if text is None:
        return []
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return []
    return [section for section in SETUP_CFG_SECTIONS if parser.has_section(section)]


def _workflows(root: Path) -> list[str]:
    folder = root / WORKFLOW_DIR
    if not folder.is_dir() or not is_inside(root, folder):
        return []
    return sorted(f"{WORKFLOW_DIR}/{p.name}" for p in folder.iterdir() if p.suffix in {".yml", ".yaml"})


def find_configs(root: Path) -> list[str]:
    """Relative paths of configs found; tool sections read as 'pyproject.toml [tool.ruff]'."""
    found = [name for name in CONFIG_FILES if (root / name).is_file()]
    found += sorted(p.name for p in root.glob("Dockerfile.*") if p.is_file())
    found += [f"pyproject.toml [tool.{name}]" for name in pyproject_tools(root)]
    found += [f"setup.cfg [{section}]" for section in _setup_cfg_sections(root)]
    return found + _workflows(root)
