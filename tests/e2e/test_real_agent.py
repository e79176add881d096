"""The real Claude Code CLI, in the real agent image, does a task in a session against a scripted fake of the
Anthropic Messages API that it reaches only through the runtime's egress proxy.

The fake listens on the host's loopback; the project allows `api.anthropic.test:PORT`, a name the runtime's
test hooks resolve to 127.0.0.1 (`egress_resolve`) and allow to be internal (`egress_internal_hosts`). The
container has no network: its only way out is the bridge to the proxy. The key and base URL are project
secrets, as a user stores them with `project action=secret_set`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from jarvis.api.runtime.v1 import runtime_pb2 as pb
from jarvis.api.scheduler.v1 import scheduler_pb2 as spb
from tests.e2e.orchestrator.conftest import runtime_env
from tests.integration.scheduler.conftest import Scheduler, base_values
from tests.support import anthropic_fake
from tests.support.anthropic_fake import AnthropicFake
from tests.support.docker_env import remove_managed
from tests.support.http_fake import serve_app
from tests.support.openai_fake import OpenAIFake
from tests.support.real_agent import (
    API_HOST,
    IMAGE,
    KEY,
    OPENAI_HOST,
    REAL_HOSTS,
    Agent,
    agent_runtime,
    claude_project,
    require_agent_image,
    source_repo,
)
from tests.support.redis_server import RedisServer
from tests.support.stack import mcp_client, result_json, start_jarvis


@pytest.fixture
def agent(tmp_path: Path, engine: docker.DockerClient) -> Iterator[Agent]:
    with agent_runtime(tmp_path / "runtime", engine) as running:
        yield running


def events_from(
    agent: Agent, project_id: str, session_id: str, until: Any, after: int = 0, timeout: float = 120
) -> list[Any]:
    """Events read page by page from a cursor, as a client does, until one satisfies `until`."""
    seen: list[Any] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page = agent.call(
            "SessionEvents", project_id=project_id, session_id=session_id, after=after, limit=3, wait_seconds=2
        )
        seen += page.events
        assert page.next_cursor >= after
        after = page.next_cursor
        if any(until(e) for e in page.events):
            return seen
    raise AssertionError(
        f"no expected event in {timeout}s; saw {[(e.seq, e.type, e.payload_json[:300]) for e in seen]}"
        f"; the fake saw {[r.path for r in agent.fake.requests]}"
    )


def check_the_agents_work(agent: Agent, project_id: str, session_id: str, events: list[Any]) -> None:
    """Claude Code's turn as the fake scripted it, the edit in the workspace, the key sent and kept secret."""
    assert [e.seq for e in events] == list(range(1, len(events) + 1))  # in order, none lost or repeated
    kinds = [e.type for e in events]
    assert kinds[:3] == ["session_start", "input", "system"], kinds
    tool_use = next(i for i, e in enumerate(events) if e.type == "assistant" and '"tool_use"' in e.payload_json)
    tool_result = next(i for i, e in enumerate(events) if e.type == "user" and '"tool_result"' in e.payload_json)
    final = next(i for i, e in enumerate(events) if anthropic_fake.FINAL in e.payload_json and e.type == "assistant")
    result = next(i for i, e in enumerate(events) if e.type == "result")
    assert tool_use < tool_result < final < result, kinds
    assert json.loads(events[result].payload_json)["is_error"] is False
    assert "File created successfully" in events[tool_result].payload_json

    session = agent.call("GetSession", project_id=project_id, session_id=session_id)
    # "ended": its input was closed on request (by the test, or the scheduler after the result), then it exited 0.
    assert (session.state, session.exit_code) == ("ended", 0), session.detail
    assert "the agent exited" in session.detail
    assert {r.path for r in agent.fake.requests} <= {"/v1/messages", "/v1/messages/count_tokens"}
    check_the_edit_and_the_key(agent, project_id, session, events)


def check_the_edit_and_the_key(agent: Agent, project_id: str, session: Any, events: list[Any]) -> None:
    """The file the fake asked for is in the session's workspace; the key reached the fake and nothing else."""
    session_id = session.id
    changes = agent.call("ProjectChanges", project_id=project_id, session_id=session_id)
    assert f"?? {anthropic_fake.FILE}" in changes.status, changes.status
    assert (
        anthropic_fake.CONTENT.strip()
        in agent.call(
            "Exec", project_id=project_id, workspace_id=session.workspace_id, argv=["cat", anthropic_fake.FILE]
        ).stdout
    )

    # The key reached the model API, in the header Claude Code sends it in ...
    assert agent.fake.keys() == {KEY}
    # ... and nowhere else: no event, container log, or byte the runtime stored.
    assert KEY not in " ".join(e.payload_json for e in events)
    assert KEY not in agent.call("ContainerLogs", project_id=project_id).logs
    for path in agent.data_dir.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert KEY.encode() not in path.read_bytes(), path


def check_nothing_else_is_reachable(agent: Agent, project_id: str) -> None:
    """Any other host, or the model API's host on another port, is refused by the proxy."""
    probe = "curl -sS -o /dev/null -w '%{http_code}' "
    for url in ("http://elsewhere.test/", f"http://{API_HOST}:1/v1/messages"):  # (API_HOST is never allowed port 1)
        refused = agent.call("Exec", project_id=project_id, command=probe + url)
        assert refused.stdout == "403", (url, refused.stdout, refused.stderr)
    tunnel = agent.call("Exec", project_id=project_id, command="curl -sS https://elsewhere.test/")
    assert tunnel.exit_code != 0
    assert "CONNECT tunnel failed, response 403" in tunnel.stderr


def test_claude_code_edits_its_workspace_through_the_egress_proxy(
    agent: Agent, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    project = claude_project(agent, "real-claude", tmp_path / "src")
    session = agent.call("SpawnSession", project_id=project, prompt="Write HELLO.md, please.")
    assert session.state == "running"
    events = events_from(agent, project, session.id, lambda e: e.type == "result")
    # A stream-json agent waits for its next message; ending the session closes its input and it exits.
    agent.call("EndSession", project_id=project, session_id=session.id)
    events += events_from(agent, project, session.id, lambda e: e.type == "exit", after=events[-1].seq)
    check_the_agents_work(agent, project, session.id, events)
    check_nothing_else_is_reachable(agent, project)
    assert KEY not in caplog.text
    refusals = [r for r in caplog.records if r.getMessage() == "egress refused"]
    # Only the probes were refused: Claude Code asked for nothing but its base URL (not its real API host).
    assert {getattr(r, "host", "") for r in refusals} == {"elsewhere.test", API_HOST}
    assert {getattr(r, "project", "") for r in refusals} == {project}


def test_a_scheduled_run_on_celery_runs_claude_code_the_same_way(agent: Agent, tmp_path: Path) -> None:
    """A schedule's trigger queues the run on Redis; a Celery worker process spawns the session, reads its
    events to the result, ends it and records success."""
    project = claude_project(agent, "scheduled-claude", tmp_path / "src")
    redis = RedisServer(tmp_path / "redis")
    redis.start()
    scheduler = Scheduler(
        tmp_path,
        base_values(tmp_path, agent.target, redis.url, run_timeout_seconds=120, visibility_timeout_seconds=180),
        redis,
    )
    try:
        scheduler.serve()
        schedule = scheduler.create([project], prompt="Write HELLO.md, please.")
        scheduler.celery("worker")
        assert scheduler.stub is not None
        (run,) = scheduler.stub.TriggerSchedule(spb.ScheduleRef(schedule_id=schedule.id), timeout=30).runs
        done = scheduler.wait_run(schedule.id, run.id, timeout=150)
        assert done.state == "succeeded", done.error + scheduler.logs()
        events = events_from(agent, project, done.session_id, lambda e: e.type == "exit")
        check_the_agents_work(agent, project, done.session_id, events)
        assert KEY not in scheduler.logs()
    finally:
        scheduler.close()
        redis.stop()
    check_nothing_else_is_reachable(agent, project)


def test_aider_edits_its_workspace_through_the_egress_proxy(
    tmp_path: Path, engine: docker.DockerClient, caplog: pytest.LogCaptureFixture
) -> None:
    """A second preset, a one-shot CLI on an OpenAI-compatible base URL: Aider's edit block applied to the file."""
    caplog.set_level(logging.INFO)
    with agent_runtime(tmp_path / "runtime", engine, OpenAIFake()) as agent:
        project = agent.call(
            "CreateProject",
            name="real-aider",
            agent="aider",
            source_url=str(source_repo(tmp_path / "src")),
            egress_allow=[f"{OPENAI_HOST}:{agent.port}"],
        ).id
        for secret, value in (("OPENAI_API_KEY", KEY), ("OPENAI_API_BASE", f"http://{OPENAI_HOST}:{agent.port}/v1")):
            agent.stub.SetSecret(pb.SetSecretRequest(project_id=project, name=secret, value=value), timeout=60)
        session = agent.call("SpawnSession", project_id=project, prompt="Write HELLO.md, please.")
        events = events_from(agent, project, session.id, lambda e: e.type == "exit")
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        lines = [json.loads(e.payload_json).get("text", "") for e in events if e.type == "text"]
        assert "Applied edit to HELLO.md" in lines, lines
        final = agent.call("GetSession", project_id=project, session_id=session.id)
        assert (final.state, final.exit_code) == ("exited", 0), final.detail
        assert {r.path for r in agent.fake.requests} == {"/v1/chat/completions"}
        check_the_edit_and_the_key(agent, project, final, events)
        check_nothing_else_is_reachable(agent, project)
    assert KEY not in caplog.text
    # Besides the probes, only Aider's own download of its model price list was refused (it goes on without).
    refused = [getattr(r, "host", "") for r in caplog.records if r.getMessage() == "egress refused"]
    assert set(refused) == {"elsewhere.test", API_HOST, "raw.githubusercontent.com"}


def jarvis_env(home: Path) -> dict[str, str]:
    """`jarvis up`'s environment for the real agent image against the fakes: the model API's name (and the probes')
    resolved to loopback by the runtime's test hooks, and room for a real CLI."""
    resolve = {name: ["127.0.0.1"] for name in (API_HOST, "elsewhere.test", *REAL_HOSTS)}
    return runtime_env(
        IMAGE,
        home,
        JARVIS_RUNTIME_MEMORY="1g",
        JARVIS_RUNTIME_PIDS="256",
        JARVIS_RUNTIME_EGRESS_RESOLVE=json.dumps(resolve),
        JARVIS_RUNTIME_EGRESS_INTERNAL_HOSTS=json.dumps([API_HOST]),
    )


@pytest.mark.anyio
async def test_claude_code_through_the_orchestrators_mcp_surface(tmp_path: Path, engine: docker.DockerClient) -> None:
    """The same task driven as a user drives it: an MCP client on `jarvis up`'s orchestrator surface."""
    require_agent_image(engine)
    fake = AnthropicFake()
    data = tmp_path / "data"
    with serve_app(fake.app()) as url:
        port = int(url.rsplit(":", 1)[1])
        running = start_jarvis(data, env=jarvis_env(tmp_path / "home"))
        try:
            async with mcp_client(running.url("/mcp/orchestrator")) as client:

                async def call(tool: str, **args: Any) -> Any:
                    return result_json(await client.call_tool(tool, args))

                pid = (
                    await call(
                        "project",
                        action="create",
                        name="mcp-claude",
                        agent="claude",
                        source_url=str(source_repo(tmp_path / "src")),
                        egress_allow=[f"{API_HOST}:{port}"],
                    )
                )["created"]["id"]
                for name, value in (("ANTHROPIC_API_KEY", KEY), ("ANTHROPIC_BASE_URL", f"http://{API_HOST}:{port}")):
                    assert KEY not in json.dumps(
                        await call("project", action="secret_set", project_id=pid, name=name, value=value)
                    )
                sid = (await call("session", action="spawn", project_id=pid, prompt="Write HELLO.md, please."))[
                    "session"
                ]["id"]
                events: list[dict[str, Any]] = []
                after, deadline = 0, time.monotonic() + 120
                while not any(e["type"] == "exit" for e in events) and time.monotonic() < deadline:
                    page = await call("session", action="events", project_id=pid, session_id=sid, after=after, wait=2)
                    events += page["events"]
                    after = page["next_cursor"]
                    if any(e["type"] == "result" for e in page["events"]):
                        await call("session", action="end", project_id=pid, session_id=sid)
                assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
                kinds = [e["type"] for e in events]
                assert kinds.index("result") < kinds.index("exit"), kinds
                assert anthropic_fake.FINAL in json.dumps(events)
                session = await call("session", action="get", project_id=pid, session_id=sid)
                assert (session["state"], session["exit_code"]) == ("ended", 0), session
                changes = await call("project_changes", project_id=pid, session_id=sid)
                assert f"?? {anthropic_fake.FILE}" in changes["status"], changes
                assert KEY not in json.dumps(events)
        finally:
            running.stop()
            remove_managed(engine, data)
    assert fake.keys() == {KEY}
    for path in data.rglob("*"):
        if path.is_file() and not path.is_symlink():
            # jarvis-up.log, and registry.db whose audit log kept secret_set's value before it was redacted
            assert KEY.encode() not in path.read_bytes(), path
