"""Whether a client is installed here: its config or data folder, its command on PATH, or the app where its
installer puts it. A command-line client (Codex, Gemini CLI) makes its folder only on first use, so a folder
alone misses one that was just installed; an app (Cursor, VS Code) may not have made its folder yet either."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from .formats import ClientFormat

# The commands each client installs (npm, a package manager, or the app's "install shell command").
COMMANDS: dict[str, tuple[str, ...]] = {
    "claude-code": ("claude",),
    "cursor": ("cursor",),
    "vscode": ("code",),
    "windsurf": ("windsurf",),
    "codex": ("codex",),
    "gemini": ("gemini",),
    "goose": ("goose",),
    "opencode": ("opencode",),
    "zed": ("zed", "zeditor"),
}


def _mac(app: str) -> Callable[[Path], tuple[Path, ...]]:
    return lambda home: (Path("/Applications") / app, home / "Applications" / app)


def _windows(*parts: str) -> Callable[[Path], tuple[Path, ...]]:
    return lambda home: (home.joinpath("AppData", "Local", *parts),)


def _linux(*paths: str) -> Callable[[Path], tuple[Path, ...]]:
    return lambda home: tuple(home / p.removeprefix("~/") if p.startswith("~/") else Path(p) for p in paths)


# Where each desktop app's installer puts it, per platform ("darwin", "win", "linux").
APP_LOCATIONS: dict[str, dict[str, Callable[[Path], tuple[Path, ...]]]] = {
    "claude-desktop": {"darwin": _mac("Claude.app"), "win": _windows("AnthropicClaude")},
    "cursor": {
        "darwin": _mac("Cursor.app"),
        "win": _windows("Programs", "cursor"),
        "linux": _linux("/opt/Cursor", "/opt/cursor", "/usr/share/cursor"),
    },
    "vscode": {
        "darwin": _mac("Visual Studio Code.app"),
        "win": _windows("Programs", "Microsoft VS Code"),
        "linux": _linux("/usr/share/code", "/snap/code"),
    },
    "windsurf": {
        "darwin": _mac("Windsurf.app"),
        "win": _windows("Programs", "Windsurf"),
        "linux": _linux("/usr/share/windsurf", "/opt/Windsurf"),
    },
    "zed": {"darwin": _mac("Zed.app"), "linux": _linux("~/.local/zed.app")},
}


def _platform_key(platform: str) -> str:
    if platform == "darwin":
        return "darwin"
    return "win" if platform.startswith(("win", "cygwin")) else "linux"


def detected(client: ClientFormat, home: Path, platform: str, search_path: str | None) -> bool:
    """Whether `client` seems installed; `search_path` is the PATH its commands are looked up on (None: this
    process's)."""
    if client.config_file(home, platform).exists() or client.app_dir(home, platform).is_dir():
        return True
    if any(shutil.which(command, path=search_path) for command in COMMANDS.get(client.name, ())):
        return True
    locations = APP_LOCATIONS.get(client.name, {}).get(_platform_key(platform))
    return locations is not None and any(p.exists() for p in locations(home))
