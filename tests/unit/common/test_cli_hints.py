"""Hints the command line prints name a command that works as printed (issue 46): the venv's `jarvis` by its path
where `jarvis` is not on PATH, with the data dir the hint is about."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

VENV_JARVIS = Path(sys.executable).parent / "jarvis"


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", shlex.join(args)], env=env, capture_output=True, text=True, timeout=180, check=False
    )


def test_the_no_tokens_hint_creates_a_token_as_printed(tmp_path: Path) -> None:
    data = tmp_path / "data dir"  # a space: the printed command quotes it
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "JARVIS_LOG_LEVEL": "WARNING"}
    env |= {k: v for k, v in os.environ.items() if k.startswith("PYTHON")}
    listed = run(str(VENV_JARVIS), "--data-dir", str(data), "token", "list", env=env)
    assert listed.returncode == 0, listed.stderr
    hint = listed.stderr.strip().splitlines()[-1]
    printed = hint.split("create one with: ", 1)[1]
    assert printed.startswith(shlex.quote(str(VENV_JARVIS))), printed  # `jarvis` alone is not on this PATH
    command = printed.replace("NAME", "ci").replace("SCOPE", "read")
    created = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=180)
    assert created.returncode == 0, created.stderr
    assert created.stdout.startswith("jv_")
    again = run(str(VENV_JARVIS), "--data-dir", str(data), "token", "list", env=env)
    assert " ci " in again.stdout
