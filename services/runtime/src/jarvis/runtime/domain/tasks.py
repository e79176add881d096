"""The tasks a project declares (make targets, npm scripts, just recipes, Taskfile tasks), as argvs to exec."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from jarvis.runtime.domain.models import Task

MAX_FILE_BYTES = 512 * 1024
_MAKE_TARGET = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]*)\s*:(?!=)")
_JUST_RECIPE = re.compile(r"^@?([A-Za-z0-9][A-Za-z0-9_-]*)(?:\s+[^:=]*)?:(?!=)")
_TASKFILE_TASK = re.compile(r"^  ([A-Za-z0-9][A-Za-z0-9_:.-]*):\s*$")


def _read(path: Path) -> str | None:
    # Checkouts are untrusted: no symlinks out of the repository, no huge files.
    if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_FILE_BYTES:
        return None
    return path.read_text(errors="replace")


def _make(text: str) -> list[Task]:
    names = dict.fromkeys(m.group(1) for line in text.splitlines() if (m := _MAKE_TARGET.match(line)))
    return [Task(n, "Makefile", ("make", n)) for n in names if not n.startswith(".")]


def _npm(text: str) -> list[Task]:
    try:
        scripts = json.loads(text).get("scripts") or {}
    except (ValueError, AttributeError):
        return []
    return [Task(str(n), "package.json", ("npm", "run", str(n))) for n in scripts if isinstance(scripts, dict)]


def _pyproject(text: str) -> list[Task]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return []
    scripts = (data.get("project") or {}).get("scripts") or {}
    tasks = [Task(str(n), "pyproject.toml", (str(n),)) for n in scripts]
    poe = ((data.get("tool") or {}).get("poe") or {}).get("tasks") or {}
    tasks += [Task(str(n), "pyproject.toml", ("poe", str(n))) for n in poe]
    return tasks


def _just(text: str) -> list[Task]:
    names = dict.fromkeys(m.group(1) for line in text.splitlines() if (m := _JUST_RECIPE.match(line)))
    return [Task(n, "justfile", ("just", n)) for n in names]


def _taskfile(text: str) -> list[Task]:
    lines = text.splitlines()
    try:
        start = lines.index("tasks:")
    except ValueError:
        return []
    names = [m.group(1) for line in lines[start + 1 :] if (m := _TASKFILE_TASK.match(line))]
    return [Task(n, "Taskfile.yml", ("task", n)) for n in names]


SOURCES = (
    ("Makefile", _make),
    ("package.json", _npm),
    ("pyproject.toml", _pyproject),
    ("justfile", _just),
    ("Taskfile.yml", _taskfile),
)


def detect(checkout: Path) -> list[Task]:
    tasks: list[Task] = []
    for name, parse in SOURCES:
        text = _read(checkout / name)
        if text is not None:
            tasks += parse(text)
    return tasks
