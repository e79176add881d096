"""Helpers shared by the project-domain tests: file trees and git with a fixed identity."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Jarvis Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Jarvis Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    # Keep the developer's own git config (hooks, signing, default branch) out of the tests.
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}

Git = Callable[..., str]


def write(root: Path, files: dict[str, str]) -> Path:
    """Create `files` (relative path -> text) under `root`; returns `root`."""
    for relative, text in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root


def run_git(cwd: Path, *args: str) -> str:
    """Run git in `cwd` with the test identity; returns stdout."""
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(["git", "-C", str(cwd), *args], env=env, check=True, capture_output=True, text=True)
    return done.stdout
