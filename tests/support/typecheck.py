"""Deno's own TypeScript checker on a program written against code mode's declarations (offline, no permissions)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from jarvis.aggregator.codemode.runner import deno_binary


def deno_check(directory: Path, declarations: str, program: str) -> subprocess.CompletedProcess[str]:
    """`deno check` of the declarations followed by the program, as one module, in `directory`. The program is the
    body of an async function, as code_run runs it (so it may `return` its answer)."""
    source = directory / "program.ts"
    source.write_text(f"{declarations}export async function program() {{\n{program}\n}}\n")
    command = [deno_binary(), "check", "--no-remote", "--no-npm", "--no-config", "--no-lock", str(source)]
    env = {"DENO_DIR": str(directory / "deno"), "NO_COLOR": "1"}
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=False)
