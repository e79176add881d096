"""ProjectServerLifecycleManager with real processes: handshake, SIGTERM/SIGKILL, crash events, no orphans."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from jarvis.projectserver.lifecycle import (
    CRASH_EVENT,
    GRACE_SECONDS,
    ProjectServerCrash,
    ProjectServerError,
    ProjectServerLifecycleManager,
)
from tests.support.projectserver import alive, make_project, wait_for_pids

pytestmark = pytest.mark.anyio


def _wrapped(project: Path, prelude: str) -> list[str]:
    """The real server, after `prelude` ran in the same process (signal handling, extra threads)."""
    code = f"{prelude}\nfrom project_mcp_server.__main__ import main\nsys.exit(main(['--root', {str(project)!r}]))\n"
    return [sys.executable, "-c", f"import os, signal, subprocess, sys, threading, time\n{code}"]


async def test_start_waits_for_the_handshake_and_stop_sends_sigterm(project: Path) -> None:
    async with ProjectServerLifecycleManager(project) as manager:
        assert not manager.running
        await manager.start()
        assert manager.running
        pid = manager.pid
        assert pid is not None
        assert alive(pid)
        assert os.getpgid(pid) == pid  # it leads its own process group
        assert manager.client.server_info is not None
        assert manager.client.server_info.name == "project-mcp-server"
        result = await manager.call_tool("inspect_state", {"path": "cache.7"})
        assert result.structured_content == {"value": "seven", "type": "str"}
        started = time.monotonic()
        await manager.stop()
        assert time.monotonic() - started < GRACE_SECONDS
        assert manager.exit_code == -15  # SIGTERM, which the server does not trap
        assert not manager.running
        assert not alive(pid)
        await manager.start()  # and it starts again
        assert manager.running
    assert not manager.running  # leaving the context stops it


async def test_sigkill_after_the_grace_period_and_no_orphans(project: Path, tmp_path: Path) -> None:
    child_pid_file = tmp_path / "child.pid"
    prelude = (
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "child = subprocess.Popen(['sleep', '300'])\n"
        f"open({str(child_pid_file)!r}, 'w').write(str(child.pid))\n"
    )
    crashes: list[ProjectServerCrash] = []
    async with ProjectServerLifecycleManager(project, argv=_wrapped(project, prelude)) as manager:
        manager.on(CRASH_EVENT, crashes.append)
        await manager.start()
        pid = manager.pid
        assert pid is not None
        child = int(child_pid_file.read_text())
        assert alive(child)
        started = time.monotonic()
        await manager.stop()
        elapsed = time.monotonic() - started
    assert GRACE_SECONDS <= elapsed < GRACE_SECONDS + 5, elapsed
    assert manager.exit_code == -9
    assert not alive(pid)
    assert not alive(child)  # the server's own child went with its process group
    assert crashes == []  # a requested stop is not a crash


async def test_unexpected_exit_emits_a_crash_event_with_exit_code_and_stderr(project: Path, tmp_path: Path) -> None:
    trigger = tmp_path / "crash-now"
    prelude = (
        "def crash_later():\n"
        f"    while not os.path.exists({str(trigger)!r}):\n"
        "        time.sleep(0.02)\n"
        "    sys.stderr.write('fatal: the flux capacitor melted\\n')\n"
        "    sys.stderr.flush()\n"
        "    os._exit(3)\n"
        "threading.Thread(target=crash_later, daemon=True).start()\n"
    )
    crashes: list[ProjectServerCrash] = []
    async with ProjectServerLifecycleManager(project, argv=_wrapped(project, prelude)) as manager:
        manager.on(CRASH_EVENT, crashes.append)
        unsubscribe = manager.on(CRASH_EVENT, lambda crash: (_ for _ in ()).throw(RuntimeError("bad listener")))
        await manager.start()
        pid = manager.pid
        trigger.touch()
        with anyio.fail_after(10):
            while not crashes:
                await anyio.sleep(0.05)
        assert not manager.running
        with pytest.raises(ProjectServerError, match="not running"):
            await manager.call_tool("inspect_state", {"path": "cache"})
        unsubscribe()
        trigger.unlink()
        await manager.start()  # a crashed server can be started again
        assert manager.running
    [crash] = crashes  # the failing listener did not hide the event from the others
    assert crash.pid == pid
    assert crash.exit_code == 3
    assert "fatal: the flux capacitor melted" in crash.stderr_tail


async def test_startup_timeout_is_a_clear_error(project: Path) -> None:
    argv = [
        sys.executable,
        "-c",
        "import sys, time; print('warming up forever', file=sys.stderr, flush=True); time.sleep(60)",
    ]
    async with ProjectServerLifecycleManager(project, argv=argv, startup_timeout=1.0) as manager:
        started = time.monotonic()
        with pytest.raises(ProjectServerError) as caught:
            await manager.start()
        assert time.monotonic() - started < 1.0 + GRACE_SECONDS
        assert not manager.running
    message = str(caught.value)
    assert "no answer to MCP initialize within 1 s" in message
    assert "warming up forever" in message


async def test_a_server_that_exits_at_start_reports_its_stderr(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    (project / "mcp-server" / "project-server.toml").write_text('[server]\ndatabase = "../outside.db"\n')
    async with ProjectServerLifecycleManager(project) as manager:
        with pytest.raises(ProjectServerError) as caught:
            await manager.start()
    assert "exit code 1" in str(caught.value)
    assert "database '../outside.db' is outside the project" in str(caught.value)


async def test_stopping_the_server_ends_a_test_run_in_progress(project: Path) -> None:
    async with ProjectServerLifecycleManager(project) as manager:
        await manager.start()

        async def run_slow_tests() -> None:
            with contextlib.suppress(Exception):  # the connection closes under the call
                await manager.call_tool("run_test_task", {"test_path": "slow", "reporter": "json"})

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_slow_tests)
            pids = await anyio.to_thread.run_sync(wait_for_pids, project)
            assert all(alive(pid) for pid in pids)
            await manager.stop()
    assert not [pid for pid in pids if alive(pid)]  # pytest and its child went with the server's group
