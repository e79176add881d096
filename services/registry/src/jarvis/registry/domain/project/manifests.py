"""Read the dependencies that package manifests declare (Python, Node, Go, Rust, JVM, Ruby, PHP)."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from jarvis.registry.domain.project.models import Dependency
from jarvis.registry.domain.project.paths import read_text_inside

_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_GO_MAJOR_SUFFIX = re.compile(r"/v\d+$")
_GRADLE_COORDINATE = re.compile(r"""["']([\w.-]+):([\w.-]+)(?::[^"']*)?["']""")
_MAVEN_ARTIFACT = re.compile(r"<artifactId>\s*([^<\s]+)\s*</artifactId>")
_GEM = re.compile(r"""^\s*gem\s+["']([^"']+)["']""", re.MULTILINE)
_COMPOSE_IMAGE = re.compile(r"""^\s*image:\s*["']?([\w./-]+)""", re.MULTILINE)

COMPOSE_FILES = frozenset({"docker-compose.yml", "docker-compose.yaml", "compose.yml", "compose.yaml"})


def python_name(requirement: str) -> str | None:
    """PEP 503-normalised project name of a requirement string, e.g. 'Flask[async]>=3' -> 'flask'."""
    match = _REQUIREMENT_NAME.match(requirement)
    return re.sub(r"[-_.]+", "-", match.group(1)).lower() if match else None


def _python_requirements(strings: Iterable[Any]) -> list[str]:
    # Entries of [dependency-groups] may be tables ({include-group = ...}); only strings name packages.
    return [name for item in strings if isinstance(item, str) and (name := python_name(item))]


def _table(data: Any, *keys: str) -> dict[str, Any]:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _pyproject(text: str) -> list[str]:
    data = tomllib.loads(text)
    project = _table(data, "project")
    names = _python_requirements(project.get("dependencies") or [])
    for group in (*_table(project, "optional-dependencies").values(), *_table(data, "dependency-groups").values()):
        names += _python_requirements(group if isinstance(group, list) else [])
    poetry = _table(data, "tool", "poetry")
    tables = [_table(poetry, "dependencies"), _table(poetry, "dev-dependencies")]
    tables += [_table(group, "dependencies") for group in _table(poetry, "group").values()]
    for table in tables:
        names += [n for key in table if key.lower() != "python" and (n := python_name(key))]
    return names


def _requirements(text: str) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    # Lines starting with '-' are pip options (-r, -e, --index-url), not requirements.
    return _python_requirements(line for line in lines if line and not line.startswith("-"))


def _pipfile(text: str) -> list[str]:
    data = tomllib.loads(text)
    keys = [*_table(data, "packages"), *_table(data, "dev-packages")]
    return [name for key in keys if (name := python_name(key))]


def _package_json(text: str) -> list[str]:
    data = json.loads(text)
    sections = ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies")
    return [name for section in sections for name in _table(data, section)]


def _go_mod(text: str) -> list[str]:
    names: list[str] = []
    in_block = False
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if line.startswith("require ("):
            in_block = True
        elif in_block and line == ")":
            in_block = False
        elif in_block or line.startswith("require "):
            fields = line.removeprefix("require ").split()
            if fields:
                # github.com/jackc/pgx/v5 and github.com/jackc/pgx are the same project.
                names.append(_GO_MAJOR_SUFFIX.sub("", fields[0]))
    return names


def _cargo(text: str) -> list[str]:
    data = tomllib.loads(text)
    tables = [_table(data, key) for key in ("dependencies", "dev-dependencies", "build-dependencies")]
    tables.append(_table(data, "workspace", "dependencies"))
    for target in _table(data, "target").values():
        tables += [_table(target, key) for key in ("dependencies", "dev-dependencies")]
    return [name for table in tables for name in table]


def _composer(text: str) -> list[str]:
    data = json.loads(text)
    return [name for section in ("require", "require-dev") for name in _table(data, section)]


def _gradle(text: str) -> list[str]:
    return [match.group(2) for match in _GRADLE_COORDINATE.finditer(text)]


def _compose(text: str) -> list[str]:
    # "bitnami/postgresql:16" -> "postgresql": the image's own name says which service it is.
    return [match.group(1).rsplit("/", 1)[-1].split(":", 1)[0] for match in _COMPOSE_IMAGE.finditer(text)]


_PARSERS: dict[str, Callable[[str], list[str]]] = {
    "pyproject.toml": _pyproject,
    "Pipfile": _pipfile,
    "package.json": _package_json,
    "go.mod": _go_mod,
    "Cargo.toml": _cargo,
    "composer.json": _composer,
    "pom.xml": lambda text: _MAVEN_ARTIFACT.findall(text),
    "build.gradle": _gradle,
    "build.gradle.kts": _gradle,
    "Gemfile": lambda text: _GEM.findall(text),
    **dict.fromkeys(COMPOSE_FILES, _compose),
}


def is_requirements_file(name: str) -> bool:
    return name.startswith("requirements") and name.endswith(".txt")


def is_manifest(name: str) -> bool:
    return name in _PARSERS or is_requirements_file(name)


def read_dependencies(root: Path, manifests: Iterable[str]) -> tuple[list[Dependency], list[str]]:
    """Dependencies of each manifest (relative posix paths), and notes on manifests that did not parse."""
    dependencies: list[Dependency] = []
    notes: list[str] = []
    for relative in manifests:
        name = PurePosixPath(relative).name
        parser = _requirements if is_requirements_file(name) else _PARSERS.get(name)
        text = read_text_inside(root, relative)
        if parser is None or text is None:
            continue
        try:
            names = parser(text)
        except (ValueError, TypeError, AttributeError) as exc:  # broken TOML/JSON: report, carry on
            notes.append(f"{relative} could not be parsed ({type(exc).__name__}); its dependencies are not counted")
            continue
        seen: set[str] = set()
        for dep in names:
            if dep not in seen:
                seen.add(dep)
                dependencies.append(Dependency(name=dep, source=relative))
    return dependencies, notes
