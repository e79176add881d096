"""The agent CLIs on the host (Claude Code, Codex, Gemini CLI, OpenCode), at the versions deploy/agent/Dockerfile
installs, from tools/clients (scripts/bootstrap), and the environment a test runs them in."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT_BIN = ROOT / "tools" / "clients" / "node_modules" / ".bin"
NODE_BIN = ROOT / "tools" / "node" / "node_modules" / ".bin"  # Node 22: Gemini CLI needs a newer one than Debian's


def client_env(home: Path) -> dict[str, str]:
    """A fresh user's environment in `home`; a missing CLI fails under JARVIS_REQUIRE_ALL=1 (CI), else skips."""
    if not (CLIENT_BIN / "claude").exists():
        message = f"{CLIENT_BIN} is missing: run scripts/bootstrap (tools/clients pins the clients)"
        if os.environ.get("JARVIS_REQUIRE_ALL") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return {
        "HOME": str(home),
        "PATH": f"{NODE_BIN}:{CLIENT_BIN}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",  # no update checks or telemetry: only loopback answers
        "NO_COLOR": "1",
    }


def mcp_list(command: str, home: Path, cwd: Path, *extra: str, stdout_only: bool = False) -> str:
    """What `<command> mcp list` prints for a user in `home` (colours removed); a failed listing fails the test."""
    result = subprocess.run(
        [command, "mcp", "list", *extra],
        cwd=cwd,
        env=client_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + ("" if stdout_only else result.stderr))
    assert result.returncode == 0, f"{command} mcp list failed ({result.returncode}):\n{output}"
    return output
