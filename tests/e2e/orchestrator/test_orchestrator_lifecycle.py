"""Projects, containers, sessions and workspaces through the MCP surface of a real `jarvis up`."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import docker
import pytest

from tests.e2e.orchestrator.conftest import runtime_env
from tests.e2e.orchestrator.test_orchestrator_tools import EXPECTED
from tests.support.docker_env import managed, remove_managed
from tests.support.stack import RunningJarvis, error_text, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio
URL = "/mcp/orchestrator"


async def events_until(client: Any, project_id: str, session_id: str, kind: str, after: int = 0) -> list[Any]:
    seen: list[Any] = []
    for _ in range(20):
        page = result_json(
            await client.call_tool(
                "session",
                {"action": "events", "project_id": project_id, "session_id": session_id, "after": after, "wait": 2},
            )
        )
        seen += page["events"]
        after = page["next_cursor"]
        if any(e["type"] == kind for e in page["events"]):
            return seen
    raise AssertionError(f"no {kind} event; saw {[e['type'] for e in seen]}")


async def test_full_lifecycle(orchestrator: RunningJarvis, source: Path, engine: docker.DockerClient) -> None:
    async with mcp_client(orchestrator.url(URL)) as client:

        async def call(tool: str, **args: Any) -> Any:
            return result_json(await client.call_tool(tool, args))

        project = (await call("project", action="create", name="e2e", source_url=str(source)))["created"]
        pid = project["id"]
        assert project["git"] is True
        assert pid in [p["id"] for p in (await call("project", action="list"))["projects"]]
        assert (await call("container", action="start", project_id=pid))["container"]["state"] == "running"
        ran = await call("container", action="exec", project_id=pid, command=["cat", "README.md"])
        assert (ran["exit_code"], ran["stdout"]) == (0, "hello\n")
        shell = await call("container", action="exec", project_id=pid, command="echo $((6*7))", timeout=10)
        assert shell["stdout"] == "42\n"
        assert "logs" in await call("container", action="logs", project_id=pid, tail=5)
        assert (await call("project_tasks", project_id=pid))["tasks"][0]["command"] == ["make", "test"]

        session = (await call("session", action="spawn", project_id=pid, prompt="hello"))["session"]
        sid, wid = session["id"], session["workspace_id"]
        first = await events_until(client, pid, sid, "result")
        assert [e["seq"] for e in first] == list(range(1, len(first) + 1))
        assert any(e["type"] == "assistant" and "echo: hello" in str(e["payload"]) for e in first)
        await call("session", action="message", project_id=pid, workspace_id=wid, message="write out.txt")
        await events_until(client, pid, sid, "result", after=first[-1]["seq"])
        changes = await call("project_changes", project_id=pid, session_id=sid)
        assert "?? out.txt" in changes["status"]
        assert (await call("session", action="get", project_id=pid, session_id=sid))["state"] == "running"
        assert [s["id"] for s in (await call("session", action="list", project_id=pid))["sessions"]] == [sid]
        listed = (await call("workspace", action="list", project_id=pid))["workspaces"]
        assert [(w["id"], w["session_id"]) for w in listed] == [(wid, sid)]
        busy = await client.call_tool("workspace", {"action": "delete", "project_id": pid, "workspace_id": wid})
        assert "in use by running session" in error_text(busy)

        ended = (await call("session", action="end", project_id=pid, session_id=sid))["session"]
        assert ended["state"] == "ended"
        await call("workspace", action="delete", project_id=pid, workspace_id=wid)
        assert (await call("session", action="cleanup", project_id=pid))["removed"] == [sid]
        await call("container", action="stop", project_id=pid)
        deleted = (await call("project", action="delete", project_id=pid))["deleted"]
        assert deleted["container_removed"] is True
        missing = await client.call_tool("project", {"action": "get", "project_id": pid})
        assert f"project '{pid}' not found" in error_text(missing)
    assert managed(engine, orchestrator.data_dir) == []


async def test_bad_input_gets_clear_errors(orchestrator: RunningJarvis, tmp_path: Path) -> None:
    async with mcp_client(orchestrator.url(URL)) as client:
        clone = await client.call_tool("project", {"action": "create", "name": "x", "source_url": str(tmp_path)})
        ext = await client.call_tool("project", {"action": "create", "name": "x", "source_url": "ext::sh -c id"})
        image = await client.call_tool("project", {"action": "create", "name": "x", "image": "nope:1"})
        unknown = await client.call_tool(
            "session", {"action": "events", "project_id": "p0123456789ab", "session_id": "s0123456789ab"}
        )
        listed = result_json(await client.call_tool("project", {"action": "list"}))
    assert "cloning" in error_text(clone)
    assert "source_url" in error_text(clone)
    assert "ext::" in error_text(ext)
    assert "image 'nope:1' does not exist" in error_text(image)
    assert "project 'p0123456789ab' not found" in error_text(unknown)
    assert listed["count"] == 0  # nothing half-created


async def test_docker_down_still_lists_tools_and_says_what_to_do(tmp_path: Path, image: str) -> None:
    bogus = f"unix://{tmp_path}/docker.sock"
    running = start_jarvis(tmp_path / "data", env={**runtime_env(image, tmp_path), "DOCKER_HOST": bogus})
    try:
        async with mcp_client(running.url(URL)) as client:
            assert {t.name for t in (await client.list_tools()).tools} == set(EXPECTED)  # the local admin's list
            created = await client.call_tool("project", {"action": "create", "name": "x"})
            assert result_json(await client.call_tool("project", {"action": "list"}))["count"] == 0
    finally:
        running.stop()
    text = error_text(created)
    assert bogus in text
    assert "unreachable" in text
    assert "DOCKER_HOST" in text


async def test_crash_leaves_no_orphans(tmp_path: Path, image: str, engine: docker.DockerClient) -> None:
    data, env = tmp_path / "data", runtime_env(image, tmp_path)
    running = start_jarvis(data, env=env)
    try:
        async with mcp_client(running.url(URL)) as client:
            project = result_json(await client.call_tool("project", {"action": "create", "name": "crash"}))["created"]
            started = result_json(
                await client.call_tool("container", {"action": "start", "project_id": project["id"]})
            )["container"]
        instance = engine.api.inspect_container(started["id"])["Config"]["Labels"]["jarvis.runtime.instance"]
        orphan = engine.containers.create(
            image,
            ["sleep", "1000"],
            network_mode="none",
            labels={"jarvis.runtime": "1", "jarvis.runtime.instance": instance, "jarvis.project": "p00000000dead"},
        )
        os.kill(running.process.pid, signal.SIGKILL)
        running.process.wait(10)

        running = start_jarvis(data, env=env)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(managed(engine, data)) > 1:
            time.sleep(0.2)
        assert [c.id for c in managed(engine, data)] == [started["id"]]
        assert orphan.id not in {c.id for c in engine.containers.list(all=True, sparse=True)}
        async with mcp_client(running.url(URL)) as client:
            again = result_json(await client.call_tool("project", {"action": "get", "project_id": project["id"]}))
        assert again["container"]["id"] == started["id"]
        assert again["container"]["state"] == "running"
    finally:
        running.stop()
        remove_managed(engine, data)
