"""Where a stdio server's launcher lives when the PATH Jarvis was started with does not have it.

The catalog launches most servers with `uvx` or `npx`. `scripts/bootstrap` installs uv with
`pip --user` (into ~/.local/bin, often not on PATH) and Jarvis's venv already holds some servers
(`mcp-server-time`): a server that the venv has runs from the venv, and a launcher missing from
PATH is looked up where such installs put it. Nothing else changes: a command found on PATH, or
given as a path, runs as it is.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

# Where per-user installs of uv and node put their launchers.
_USER_BIN_DIRS = (".local/bin", ".cargo/bin", ".volta/bin", ".npm-global/bin")
FIXES = {
    "uvx": "install uv (python3 -m pip install --user uv, or scripts/bootstrap) and put ~/.local/bin on PATH",
    "npx": "install Node.js 18 or newer (it provides npx), e.g. apt-get install nodejs npm",
}


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def resolve(command: str, args: tuple[str, ...], path: str, home: Path | None = None) -> tuple[str, tuple[str, ...]]:
    """The command and arguments to spawn for `command args` under the search path `path`."""
    if os.sep in command:
        return command, args
    venv_bin = Path(sys.executable).parent
    # `uvx <package>` whose console script the venv already has: no download, no uv needed.
    if command == "uvx" and args and not args[0].startswith("-") and _executable(venv_bin / args[0]):
        return str(venv_bin / args[0]), args[1:]
    if shutil.which(command, path=path) is not None:
        return command, args
    base = home or Path.home()
    for directory in (venv_bin, *(base / d for d in _USER_BIN_DIRS)):
        if _executable(directory / command):
            return str(directory / command), args
    return command, args


def fix_for(command: str) -> str:
    """What to do when `command` cannot be found."""
    name = os.path.basename(command)
    return FIXES.get(
        name, f"install {name} or give its absolute path in the server's launch command (jarvis_server action=edit)"
    )
