"""One Jarvis per data dir: `jarvis mcp` relays to the `jarvis up` serving it, a second `jarvis up` refuses,
and nothing running is disturbed. Secrets set over MCP stay write-only and the embedded key is owner-only.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path
from typing import Any

import docker
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.e2e.orchestrator.conftest import runtime_env
from tests.support.docker_env import remove_managed
from tests.support.stack import error_text, free_port, jarvis_cli, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio
KEY = "sk-e2e-secret-value-0123456789"


async def wait_event(client: Client, project_id: str, session_id: str, text: str, after: int = 0) -> int:
    """The cursor after the event whose payload contains `text`."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        page = result_json(
            await client.call_tool(
                "session",
                {"action": "events", "project_id": project_id, "session_id": session_id, "after": after, "wait": 2},
            )
        )
        for event in page["events"]:
            if text in json.dumps(event["payload"]):
                return int(event["seq"])
        after = page["next_cursor"]
    raise AssertionError(f"no event with {text!r}")


async def test_mcp_relays_to_the_running_jarvis_and_a_second_up_refuses(
    tmp_path: Path, image: str, engine: docker.DockerClient
) -> None:
    data, home = tmp_path / "data", tmp_path / "home"
    env = runtime_env(image, home)
    running = start_jarvis(data, env=env)
    try:
        async with mcp_client(running.url("/mcp/orchestrator")) as http:

            async def call(tool: str, **args: Any) -> Any:
                return result_json(await http.call_tool(tool, args))

            pid = (await call("project", action="create", name="shared"))["created"]["id"]
            stored = await call("project", action="secret_set", project_id=pid, name="API_TOKEN", value=KEY)
            assert stored["stored"]["name"] == "API_TOKEN"
            assert KEY not in json.dumps(stored)
            sid = (await call("session", action="spawn", project_id=pid, prompt="hello"))["session"]["id"]
            cursor = await wait_event(http, pid, sid, "echo: hello")

            # The stdio entry a desktop client spawns: it must reach this Jarvis, not start a second one.
            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "jarvis.cli", "--data-dir", str(data), "mcp", "--surface", "orchestrator"],
                env={**os.environ, **env, "JARVIS_LOG_LEVEL": "WARNING"},
            )
            async with Client(params, mode="legacy") as stdio:
                sessions = result_json(await stdio.call_tool("session", {"action": "list", "project_id": pid}))
                assert [(s["id"], s["state"]) for s in sessions["sessions"]] == [(sid, "running")]
                await stdio.call_tool(
                    "session", {"action": "message", "project_id": pid, "session_id": sid, "message": "via stdio"}
                )
                cursor = await wait_event(stdio, pid, sid, "echo: via stdio", after=cursor)
                names = result_json(await stdio.call_tool("project", {"action": "secret_list", "project_id": pid}))
                assert [s["name"] for s in names["secrets"]] == ["API_TOKEN"]
                assert KEY not in json.dumps(names)
                unknown = await stdio.call_tool(
                    "project", {"action": "secret_delete", "project_id": pid, "name": "NOPE"}
                )
                assert "no secret named 'NOPE'" in error_text(unknown)

            # A second `jarvis up` on the same data dir refuses, naming the holder; nothing is disturbed.
            second = jarvis_cli("up", "--port", str(free_port()), data_dir=data, env=env, check=False, timeout=60)
            assert second.returncode != 0
            assert f"pid {running.process.pid}" in second.stderr
            assert "jarvis up" in second.stderr
            assert (await call("session", action="get", project_id=pid, session_id=sid))["state"] == "running"
            await call("session", action="message", project_id=pid, session_id=sid, message="still here")
            await wait_event(http, pid, sid, "echo: still here", after=cursor)

        lock = json.loads((data / "jarvis.lock").read_text())
        assert (lock["pid"], lock["url"]) == (running.process.pid, running.base_url)
        key_file = data / "runtime" / "secrets.key"
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        assert KEY not in running.log()
        assert KEY.encode() not in (data / "runtime" / "runtime.db").read_bytes()
    finally:
        running.stop()
        remove_managed(engine, data)


def test_up_refuses_a_data_dir_a_stdio_jarvis_holds(tmp_path: Path) -> None:
    import subprocess

    data = tmp_path / "data"
    holder = subprocess.Popen(
        [sys.executable, "-m", "jarvis.cli", "--data-dir", str(data), "mcp", "--surface", "jarvis"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "HOME": str(tmp_path), "JARVIS_LOG_LEVEL": "WARNING"},
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and '"jarvis mcp"' not in _read(data / "jarvis.lock"):
            time.sleep(0.1)
        refused = jarvis_cli(
            "up", "--port", str(free_port()), data_dir=data, env={"HOME": str(tmp_path)}, check=False, timeout=60
        )
        assert refused.returncode != 0
        assert f"`jarvis mcp` (pid {holder.pid})" in refused.stderr
    finally:
        holder.kill()
        holder.wait(10)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
