"""Value objects returned by project analysis, diff, DevOps scaffolding and profile suggestions."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Dependency:
    """A package a manifest declares, with the manifest it came from (relative to the project)."""

    name: str
    source: str


@dataclass(frozen=True)
class ProjectReport:
    """What a project is: languages, frameworks, tooling and git state."""

    path: Path
    languages: tuple[str, ...] = ()
    file_counts: dict[str, int] = field(default_factory=dict)
    frameworks: tuple[str, ...] = ()
    package_managers: tuple[str, ...] = ()
    configs: tuple[str, ...] = ()
    test_frameworks: tuple[str, ...] = ()
    dependencies: tuple[Dependency, ...] = ()
    is_git_repo: bool = False
    git_branch: str = ""
    files_scanned: int = 0
    walk_truncated: bool = False
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class DiffResult:
    """Git status and diff of a work tree, bounded in size."""

    branch: str
    status: str
    diff: str
    truncated: bool
    files: tuple[str, ...]


@dataclass(frozen=True)
class DevopsResult:
    """Files scaffolded (or that would be, on a dry run) and files left alone with the reason."""

    stack: str
    written: tuple[str, ...]
    skipped: tuple[str, ...]
    backups: tuple[str, ...] = ()
    dry_run: bool = False


@dataclass(frozen=True)
class CandidateServer:
    """An MCP server that a profile suggestion may pick (from the catalog or installed)."""

    name: str
    description: str = ""
    category: str = ""
    tool_names: list[str] = field(default_factory=list)
    installed: bool = False


@dataclass(frozen=True)
class ProfileSuggestion:
    """A named set of servers to create as a profile, with why each was picked."""

    name: str
    servers: tuple[str, ...]
    reasons: tuple[str, ...]
