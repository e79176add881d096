"""Bounded walk of a project tree: language counts by extension and where manifests live."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

MAX_FILES = 50_000
MANIFEST_DEPTH = 2  # root, a child (frontend/) and a grandchild (services/api/)

# Dependency, build and cache folders: what they hold is not the project's own code.
SKIP_DIRS = frozenset(
    {
        "node_modules",
        "venv",
        "env",
        "__pycache__",
        "dist",
        "build",
        "target",
        "vendor",
        "bower_components",
        "site-packages",
        "Pods",
        "coverage",
        "htmlcov",
    }
)

LANGUAGE_BY_EXTENSION = {
    ".py": "python",
    ".pyi": "python",
    ".pyx": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".scala": "scala",
    ".rb": "ruby",
    ".php": "php",
    ".cs": "csharp",
    ".fs": "fsharp",
    ".swift": "swift",
    ".m": "objective-c",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".dart": "dart",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".hs": "haskell",
    ".clj": "clojure",
    ".lua": "lua",
    ".r": "r",
    ".jl": "julia",
    ".zig": "zig",
    ".sh": "shell",
    ".bash": "shell",
    ".zsh": "shell",
    ".ps1": "powershell",
    ".sql": "sql",
    ".html": "html",
    ".htm": "html",
    ".css": "css",
    ".scss": "css",
    ".sass": "css",
    ".less": "css",
    ".vue": "vue",
    ".svelte": "svelte",
    ".tf": "terraform",
}


@dataclass
class WalkResult:
    counts: Counter[str] = field(default_factory=Counter)
    files_scanned: int = 0
    truncated: bool = False
    found: list[str] = field(default_factory=list)  # relative posix paths `keep` accepted


def _skipped(name: str) -> bool:
    # Hidden folders (.git, .venv, .tox, caches, editor state) never hold the project's sources.
    return name.startswith(".") or name in SKIP_DIRS or name.endswith(".egg-info")


def walk(root: Path, keep: Callable[[str], bool], max_files: int = MAX_FILES) -> WalkResult:
    """Count files by language and collect names `keep` accepts down to MANIFEST_DEPTH."""
    result = WalkResult()
    # followlinks=False (the default) keeps the walk from leaving the project through symlinks.
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not _skipped(d))
        relative_dir = Path(dirpath).relative_to(root)
        depth = len(relative_dir.parts)
        for name in sorted(filenames):
            if result.files_scanned >= max_files:
                result.truncated = True
                return result
            result.files_scanned += 1
            language = LANGUAGE_BY_EXTENSION.get(os.path.splitext(name)[1].lower())
            if language:
                result.counts[language] += 1
            if depth <= MANIFEST_DEPTH and keep(name):
                result.found.append((relative_dir / name).as_posix())
    return result


def ordered_languages(counts: Counter[str]) -> list[str]:
    """Languages by share of files, largest first; ties by name so output is stable."""
    return [name for name, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]
