"""The data dir and its SQLite databases are the owner's alone (issue 34): the registry's holds servers'
environment in clear, so no other local user may read it, whatever the umask."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.support.stack import jarvis_cli, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio

SIDE_FILES = ("", "-wal", "-shm", "-journal")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def databases(data: Path) -> list[Path]:
    """Every SQLite file (and side file) `jarvis up` keeps under `data`."""
    names = [data / "registry.db", data / "runtime" / "runtime.db", data / "scheduler" / "scheduler.db"]
    return [Path(f"{db}{suffix}") for db in names for suffix in SIDE_FILES if Path(f"{db}{suffix}").exists()]


def test_jarvis_up_keeps_its_databases_owner_only(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    # A database an older Jarvis left readable by others is tightened at start (an empty file is an empty database).
    loose = data / "registry.db"
    loose.touch()
    loose.chmod(0o644)
    old_umask = os.umask(0o022)
    try:
        running = start_jarvis(data, env={"HOME": str(tmp_path)})
    finally:
        os.umask(old_umask)
    try:
        found = databases(data)
        names = {p.name for p in found}
        assert {"registry.db", "runtime.db", "scheduler.db", "registry.db-wal"} <= names, names
        assert {str(p): oct(mode(p)) for p in found} == {str(p): oct(0o600) for p in found}
        for directory in (data / "runtime", data / "scheduler"):
            assert mode(directory) == 0o700, directory
    finally:
        running.stop()


def test_a_command_on_a_fresh_data_dir_makes_it_owner_only(tmp_path: Path) -> None:
    data = tmp_path / "fresh" / "jarvis"
    jarvis_cli("token", "list", data_dir=data, env={"HOME": str(tmp_path)})
    assert mode(data) == 0o700
    registry = data / "registry.db"
    assert registry.exists()
    assert mode(registry) == 0o600


async def test_check_status_warns_of_a_data_dir_others_can_read(tmp_path: Path) -> None:
    data = tmp_path / "data"
    running = start_jarvis(data, env={"HOME": str(tmp_path)})
    try:
        data.chmod(0o755)
        registry = data / "registry.db"
        registry.chmod(0o644)
        async with mcp_client(running.url()) as client:
            status = result_json(await client.call_tool("jarvis_check_status", {}))
        checks = {c["name"]: c for c in status["doctor"]}
        assert checks["data_dir"]["ok"] is False
        [warning] = status["warnings"]
        assert f"{data} is readable by others (mode 0o755): run `chmod 700 {data}`" in warning
        assert f"{registry} is readable by others (mode 0o644): run `chmod 600 {registry}`" in warning
        # A warning, not ill health: Jarvis is as healthy as its other checks say (Docker may be absent here).
        others = [c["ok"] for c in status["doctor"] if c["name"] != "data_dir"]
        probes = [p["ok"] is not False for p in (*status["services"].values(), *status["daemons"].values())]
        assert status["healthy"] is (all(others) and all(probes))
        loose_health = status["healthy"]

        data.chmod(0o700)
        registry.chmod(0o600)
        async with mcp_client(running.url()) as client:
            status = result_json(await client.call_tool("jarvis_check_status", {}))
        assert status["warnings"] == []
        assert status["healthy"] is loose_health
        assert {c["name"]: c for c in status["doctor"]}["data_dir"]["ok"] is True
    finally:
        running.stop()
