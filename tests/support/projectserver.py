"""A scaffolded project with the sample application, and how to reach its server over stdio."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

from mcp import StdioServerParameters

from jarvis.projectserver.scaffold import scaffold_project_server

SAMPLE = Path(__file__).parent / "projectserver_sample"
LOG_ENTRIES = [
    {"ts": "2026-01-01T00:00:00Z", "level": "debug", "msg": "cache warmed"},
    {"ts": "2026-01-01T00:00:01Z", "level": "info", "msg": "request served", "status": 200},
    {"ts": "2026-01-01T00:00:01Z", "msg": "no level at all: counts as debug"},
    {"ts": "2026-01-01T00:00:02Z", "level": "warn", "msg": "slow query", "ms": 900},
    {"ts": "2026-01-01T00:00:03Z", "levelname": "ERROR", "msg": "payment failed"},
    {"ts": "2026-01-01T00:00:04Z", "level": "info", "msg": "request served", "status": 201},
    {"ts": "2026-01-01T00:00:05Z", "level": "error", "msg": "timeout talking to bank"},
]


def make_project(root: Path) -> Path:
    """Scaffold the project server into `root` and add the sample application, its tests, seed and log."""
    scaffold_project_server(root)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("sample_app", "tests", "slow", "db"):
        shutil.copytree(SAMPLE / part, root / part, ignore=skip)
    shutil.copy(SAMPLE / "pytest.ini", root / "pytest.ini")
    shutil.copy(SAMPLE / "project-server.toml", root / "mcp-server" / "project-server.toml")
    (root / "logs").mkdir()
    lines = [json.dumps(e) for e in LOG_ENTRIES[:3]] + ["this line is not JSON"]
    lines += [json.dumps(e) for e in LOG_ENTRIES[3:]]
    (root / "logs" / "app.ndjson").write_text("\n".join(lines) + "\n")
    return root


def wait_for_pids(root: Path, timeout: float = 30.0) -> list[int]:
    """The pids the slow sample test writes once it runs (pytest's own and its child's)."""
    pids = root / "slow" / "pids"
    deadline = time.monotonic() + timeout
    while not pids.exists() or not pids.read_text().strip():
        if time.monotonic() > deadline:
            raise AssertionError("the slow sample test never started")
        time.sleep(0.05)
    return [int(p) for p in pids.read_text().split()]


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def server_parameters(root: Path) -> StdioServerParameters:
    """Run the scaffolded server with this interpreter (the repo's venv), as an argv list."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "project_mcp_server", "--root", str(root)],
        env={"PYTHONPATH": str(root / "mcp-server" / "src")},
        cwd=root,
    )
