"""Server configuration: `mcp-server/project-server.toml`, paths confined to the project root."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONFIG_NAME = "project-server.toml"


class ConfigError(ValueError):
    """The configuration file is missing a value or names a path outside the project."""


def resolve_inside(root: Path, relative: str) -> Path:
    """`relative` resolved against `root`; raises ValueError if it leaves the project.

    Resolution follows symlinks before the comparison, and the comparison is component-wise
    (`Path.is_relative_to`), so neither `../` nor a symlink nor a shared name prefix
    (`/srv/app` vs `/srv/app-secrets`) can reach outside.
    """
    base = root.resolve()
    target = (base / relative).resolve()
    if not target.is_relative_to(base):
        raise ValueError(f"'{relative}' is outside the project")
    return target


@dataclass(frozen=True)
class ServerConfig:
    """What the tools need to know about the project; every path is absolute and inside `root`."""

    root: Path
    python_path: tuple[Path, ...] = ()
    state_modules: tuple[str, ...] = ()
    app: str = ""
    database: Path | None = None
    seed_file: Path | None = None
    log_file: Path | None = None
    test_timeout_seconds: float = 300.0
    follow_seconds: float = 2.0
    extra: dict[str, Any] = field(default_factory=dict)

    def relative(self, path: Path) -> str:
        """`path` as the agent should see it: relative to the project root when inside it."""
        return str(path.relative_to(self.root)) if path.is_relative_to(self.root) else str(path)


def load_config(root: Path, config_file: Path | None = None) -> ServerConfig:
    """Read `[server]` from the config file (default `ROOT/mcp-server/project-server.toml`)."""
    root = root.resolve()
    path = config_file or root / "mcp-server" / CONFIG_NAME
    raw: dict[str, Any] = {}
    if path.is_file():
        with path.open("rb") as fh:
            raw = tomllib.load(fh).get("server", {})

    def inside(key: str, default: str) -> Path | None:
        value = raw.pop(key, default)
        if not isinstance(value, str):
            raise ConfigError(f"{path}: '{key}' must be a string")
        if not value:
            return None
        try:
            return resolve_inside(root, value)
        except ValueError as exc:
            raise ConfigError(f"{path}: {key} {exc}") from None

    python_path = tuple(p for p in (inside_each(root, path, raw.pop("python_path", ["."]))) if p.is_dir())
    return ServerConfig(
        root=root,
        python_path=python_path,
        state_modules=tuple(str(m) for m in raw.pop("state_modules", [])),
        app=str(raw.pop("app", "")),
        database=inside("database", "data/app.db"),
        seed_file=inside("seed_file", "db/seed.sql"),
        log_file=inside("log_file", "logs/app.ndjson"),
        test_timeout_seconds=float(raw.pop("test_timeout_seconds", 300)),
        follow_seconds=float(raw.pop("follow_seconds", 2.0)),
        extra=raw,
    )


def inside_each(root: Path, source: Path, values: Any) -> list[Path]:
    """Each of a list of project-relative directories, resolved and confined to the project."""
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ConfigError(f"{source}: 'python_path' must be a list of strings")
    try:
        return [resolve_inside(root, v) for v in values]
    except ValueError as exc:
        raise ConfigError(f"{source}: python_path {exc}") from None
