"""`jarvis scaffold project-server DIR`: copy the project-server template into a project.

The template is a directory of ordinary files shipped as package data (`template/`), so its
Python code is linted and type-checked with the rest of Jarvis and copied byte for byte.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any, cast

TEMPLATE = "template"
_SKIP_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
_SKIP_SUFFIXES = {".pyc", ".pyo"}


class ScaffoldError(Exception):
    """The scaffold would overwrite files, or the target is not a directory."""


@dataclass(frozen=True)
class ScaffoldResult:
    """What was written where."""

    root: Path
    files: tuple[Path, ...]


def _template_files(template: Path) -> list[Path]:
    found = []
    for path in sorted(template.rglob("*")):
        relative = path.relative_to(template)
        if path.is_file() and not _SKIP_DIRS & set(relative.parts) and path.suffix not in _SKIP_SUFFIXES:
            found.append(relative)
    return found


def scaffold_project_server(destination: Path, *, force: bool = False) -> ScaffoldResult:
    """Write `mcp-server/` (server package, pyproject, config, manifest, tests) into `destination`.

    Refuses to overwrite existing files unless `force`; nothing is written when it refuses.
    """
    destination = destination.resolve()
    if destination.exists() and not destination.is_dir():
        raise ScaffoldError(f"{destination} is not a directory")
    with as_file(files("jarvis.projectserver") / TEMPLATE) as template:
        relatives = _template_files(template)
        clashes = [r for r in relatives if (destination / r).exists()]
        if clashes and not force:
            shown = ", ".join(str(c) for c in clashes[:5])
            raise ScaffoldError(
                f"{len(clashes)} file(s) already exist in {destination} (e.g. {shown}); pass --force to overwrite them"
            )
        written = []
        for relative in relatives:
            target = destination / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((template / relative).read_bytes())
            written.append(target)
    return ScaffoldResult(destination, tuple(written))


def _template_schemas() -> Any:
    """The template's `schemas.py`, loaded from the file itself (standard library only, no server import)."""
    source = files("jarvis.projectserver") / TEMPLATE / "mcp-server" / "src" / "project_mcp_server" / "schemas.py"
    with as_file(source) as path:
        spec = importlib.util.spec_from_file_location("_jarvis_project_server_schemas", path)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


def template_tool_schemas() -> dict[str, dict[str, Any]]:
    """The template's tool table (`schemas.TOOLS`): name -> description and inputSchema.

    Read from the template file itself so that Jarvis and the generated server can never
    describe the tools differently.
    """
    return cast(dict[str, dict[str, Any]], _template_schemas().TOOLS)


def template_refused_state_names() -> str:
    """The pattern of names `inspect_state` never reads (`schemas.REFUSED_STATE_NAMES`)."""
    return cast(str, _template_schemas().REFUSED_STATE_NAMES)
