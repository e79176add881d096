"""The data dir's lock file: who holds it, where it serves, and where its registry answers, so that an admin command
asks the `jarvis up` serving the data dir instead of opening its database a second time (issue 46 item 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from jarvis.cli.datadir import LOCK_FILE, DataDirLock, Holder
from jarvis.cli.registry import serving_registry, serving_services

SERVICES = {"registry": "127.0.0.1:40001", "runtime": "127.0.0.1:40002"}


def test_no_file_or_an_empty_one_means_nobody_holds_it_and_is_said_at_once(tmp_path: Path) -> None:
    lock = DataDirLock(tmp_path)
    started = time.monotonic()
    assert lock.holder(wait=30) is None  # no file
    (tmp_path / LOCK_FILE).write_text("")
    assert lock.holder(wait=30) is None  # emptied by the last holder on its way out
    assert time.monotonic() - started < 10  # not the 30 s a write in progress is given


def test_the_holder_publishes_its_services_then_its_url(tmp_path: Path) -> None:
    lock = DataDirLock(tmp_path)
    assert lock.acquire("jarvis up") is None
    try:
        assert lock.holder() == Holder(os.getpid(), "jarvis up")
        assert serving_registry(tmp_path) == ""  # not serving yet
        lock.publish("", SERVICES)  # the services serve before the HTTP port answers
        assert serving_services(tmp_path) == SERVICES
        lock.publish("http://127.0.0.1:8765")  # the services stay named
        assert lock.holder() == Holder(os.getpid(), "jarvis up", "http://127.0.0.1:8765", SERVICES)
        assert serving_registry(tmp_path) == "127.0.0.1:40001"
    finally:
        lock.release()
    assert lock.holder(wait=30) is None
    assert serving_registry(tmp_path) == ""
    assert serving_services(tmp_path) == {}


def test_a_shorter_record_replaces_a_longer_one_whole(tmp_path: Path) -> None:
    lock = DataDirLock(tmp_path)
    assert lock.acquire("jarvis up") is None
    try:
        lock.publish("http://127.0.0.1:8765/a/long/path/to/make/the/record/longer", SERVICES)
        lock.publish("http://h:1", {})
        assert json.loads((tmp_path / LOCK_FILE).read_text())["url"] == "http://h:1"
    finally:
        lock.release()


def test_a_record_left_by_a_dead_process_or_by_jarvis_mcp_names_no_registry(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(gone.stdout)
    record = {
        "pid": dead_pid,
        "command": "jarvis up",
        "url": "http://127.0.0.1:1",
        "services": {"registry": "127.0.0.1:2"},
    }
    (tmp_path / LOCK_FILE).write_text(json.dumps(record))
    assert serving_registry(tmp_path) == ""  # killed before it could empty the file
    (tmp_path / LOCK_FILE).write_text(json.dumps({**record, "pid": os.getpid(), "command": "jarvis mcp"}))
    assert serving_registry(tmp_path) == ""


def test_a_second_holder_learns_who_holds_it(tmp_path: Path) -> None:
    first = DataDirLock(tmp_path)
    assert first.acquire("jarvis up") is None
    try:
        first.publish("http://127.0.0.1:8765", SERVICES)
        holder = DataDirLock(tmp_path).acquire("jarvis mcp")
        assert holder == Holder(os.getpid(), "jarvis up", "http://127.0.0.1:8765", SERVICES)
    finally:
        first.release()
