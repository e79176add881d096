"""Catalog entries that serve directories (the filesystem server): the argument `{directories}` in their launch
args stands for the directories an install names, or the project roots when it names none. A `.` would serve
whatever directory Jarvis happened to start in, so no entry carries one; the install answer says what is served."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from jarvis.common.errors import InvalidArgument
from jarvis.registry.domain.records import Launch

DIRECTORIES_ARG = "{directories}"


def served_directories(
    entry: str, launch: Launch, given: Sequence[str], defaults: Sequence[Path]
) -> tuple[Launch, list[str]]:
    """`launch` with its directories filled in, and those directories ([] for an entry that serves none)."""
    if DIRECTORIES_ARG not in launch.args:
        if given:
            raise InvalidArgument(f"'{entry}' serves no directories; install it without any")
        return launch, []
    directories = [_checked(d) for d in given] if given else [str(p) for p in defaults]
    args = tuple(a for arg in launch.args for a in (directories if arg == DIRECTORIES_ARG else (arg,)))
    return replace(launch, args=args), directories


def note(directories: Sequence[str], given: bool) -> str:
    if not directories:
        return ""
    where = "the directories given" if given else "the project roots (JARVIS_PROJECT_ROOTS), as the install named none"
    return f"serves {', '.join(directories)}: {where}"


def _checked(directory: str) -> str:
    if not isinstance(directory, str) or not directory.strip() or any(ord(ch) < 32 for ch in directory):
        raise InvalidArgument("each directory must be a non-empty path without control characters")
    path = Path(directory)
    if not path.is_absolute():
        raise InvalidArgument(f"directory {directory!r} is not absolute; give full paths such as /home/me/project")
    path = Path(os.path.normpath(path))
    if not path.is_dir():
        raise InvalidArgument(f"directory {str(path)!r} does not exist here (or is not a directory); create it first")
    return str(path)
