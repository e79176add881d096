"""Helpers shared by the project-domain tests: file trees and git with a fixed identity."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.support.git_env import GIT_ENV

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
