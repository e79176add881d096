"""A test that outlives its welcome: run_test_task's timeout, or the server's stop, must end it."""

import os
import subprocess
import time
from pathlib import Path


def test_sleeps() -> None:
    child = subprocess.Popen(["sleep", "120"])
    Path("slow/pids").write_text(f"{os.getpid()} {child.pid}")  # pytest runs from the project root
    time.sleep(120)
