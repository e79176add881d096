"""A runtime started without a reachable Docker engine says why in its plain-text log, and what still works."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.support.runtime_service import TEST_SECRETS_KEY
from tests.support.stack import free_port


def test_the_warning_names_why_the_runtime_is_not_reconciled(tmp_path: Path) -> None:
    """Issue 46: every start logged "runtime not reconciled yet" with the reason only in the JSON log's fields."""
    log = tmp_path / "runtime.log"
    env = {
        **os.environ,
        "JARVIS_RUNTIME_DATA_DIR": str(tmp_path / "data"),
        "JARVIS_RUNTIME_LISTEN": f"127.0.0.1:{free_port()}",
        "DOCKER_HOST": f"unix://{tmp_path / 'no-engine.sock'}",
        "JARVIS_LOG_JSON": "false",
        "JARVIS_RUNTIME_SECRETS_KEY": TEST_SECRETS_KEY,
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "jarvis.runtime"], env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 30
        while "not reconciled yet" not in log.read_text(errors="replace"):
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
    finally:
        process.terminate()
        process.wait(15)
    line = next(x for x in log.read_text().splitlines() if "not reconciled yet" in x)
    assert "no-engine.sock" in line or "Docker" in line, line
    assert "everything else works" in line
