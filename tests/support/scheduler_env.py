"""Real Celery worker and beat processes of the scheduler, and waiting on run states."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def scheduler_env(values: dict[str, Any]) -> dict[str, str]:
    """The process environment with `values` as JARVIS_SCHEDULER_* variables (lists as JSON)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JARVIS_SCHEDULER_") and k != "REDIS_URL"}
    for key, value in values.items():
        env[f"JARVIS_SCHEDULER_{key.upper()}"] = str(value)
    env["JARVIS_LOG_JSON"] = "false"
    return env


class CeleryProcess:
    """`celery -A jarvis.scheduler.celery_app worker|beat` in its own process group, output to a file."""

    def __init__(self, kind: str, env: dict[str, str], log_path: Path, name: str = "") -> None:
        self.kind = kind
        self.log_path = log_path
        args = [sys.executable, "-m", "celery", "-A", "jarvis.scheduler.celery_app", kind, "--loglevel", "INFO"]
        if kind == "worker":
            args += [
                "--concurrency",
                "4",
                "--hostname",
                f"{name or 'worker'}@%h",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ]
        else:
            args += ["--schedule", str(log_path.with_suffix(".schedule"))]
        self._log = log_path.open("ab")
        self.process = subprocess.Popen(
            args, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True, cwd=log_path.parent
        )

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout: float = 30) -> None:
        marker = "ready." if self.kind == "worker" else "beat: Starting"
        wait_for(
            lambda: marker in self.output() or None,
            timeout,
            lambda: f"celery {self.kind} not ready; output:\n{self.output()[-3000:]}",
        )

    def kill(self) -> None:
        """SIGKILL the whole process group: no warm shutdown, nothing acknowledged."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()


def wait_for(probe: Callable[[], T | None], timeout: float, explain: Callable[[], str] | str = "") -> T:
    """Poll `probe` until it returns something other than None (or fail with `explain`)."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(explain() if callable(explain) else (explain or f"not reached in {timeout}s"))
        time.sleep(0.1)
