"""Agent presets, project secrets and honest spawns over real gRPC, on the real Docker engine.

Each preset runs a fake of its CLI (tests/support/fake_presets) that checks its command line and its API
key, then prints that CLI's own events. Secrets must reach the agent and nothing else: no answer, event,
log line or database byte carries a value.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import grpc
import pytest

from jarvis.api.runtime.v1 import runtime_pb2 as pb
from jarvis.api.runtime.v1 import runtime_pb2_grpc as pb_grpc
from jarvis.runtime.server import serve_runtime
from tests.integration.runtime.conftest import Service, rpc_error
from tests.integration.runtime.test_runtime_sessions_rpc import wait_for
from tests.support.docker_env import remove_instance
from tests.support.runtime_service import runtime_settings

KEY = "sk-test-0123456789abcdefSECRET"  # what a model API key looks like; must never leak
KEYS = {
    "claude": "ANTHROPIC_API_KEY",
    "codex": "OPENAI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "opencode": "ANTHROPIC_API_KEY",
    "aider": "OPENAI_API_KEY",
}
# The event types each preset's output maps onto (besides session_start, input, stderr and exit).
EXPECTED = {
    "claude": {"system", "assistant", "result"},
    "codex": {"system", "assistant", "tool_result", "result"},
    "gemini": {"system", "assistant", "result"},
    "opencode": {"system", "assistant", "step_finish"},
    "aider": {"text"},
}


@pytest.fixture
def presets(tmp_path: Path, presets_image: str, engine: docker.DockerClient) -> Iterator[Service]:
    """A runtime whose default image has every preset's fake CLI, with tight flood and lifetime limits."""
    settings = runtime_settings(
        tmp_path / "runtime", presets_image, session_output_max_bytes=200_000, session_max_seconds=8
    )
    runtime, server = serve_runtime(settings, None, "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        yield Service(runtime, server, pb_grpc.RuntimeServiceStub(channel), settings, engine)
    finally:
        channel.close()
        server.stop(1)
        runtime.close()
        remove_instance(engine, settings.instance)


def call(service: Service, method: str, request: Any) -> Any:
    return getattr(service.stub, method)(request, timeout=120)


def events_until_done(service: Service, project_id: str, session_id: str, timeout: float = 30) -> list[Any]:
    """Every event of the session once it has finished."""
    seen: list[Any] = []
    after, deadline = 0, time.monotonic() + timeout
    while time.monotonic() < deadline:
        page = service.call(
            "SessionEvents", project_id=project_id, session_id=session_id, after=after, limit=500, wait_seconds=2
        )
        seen += page.events
        after = page.next_cursor
        if page.state != "running" and not page.events:
            return seen
    raise AssertionError(f"the session did not finish within {timeout}s; saw {[(e.seq, e.type) for e in seen]}")


@pytest.mark.parametrize("agent", sorted(KEYS))
def test_each_preset_runs_headless_with_its_key_and_maps_its_events(
    presets: Service, agent: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    project = presets.call("CreateProject", name=f"uses-{agent}", agent=agent)
    assert project.agent == agent
    stored = call(presets, "SetSecret", pb.SetSecretRequest(project_id=project.id, name=KEYS[agent], value=KEY))
    assert stored.name == KEYS[agent]
    session = presets.call("SpawnSession", project_id=project.id, prompt="hello there")
    assert session.agent == agent
    if agent == "claude":  # a long-lived agent: its input closes when the session ends
        time.sleep(1)
        presets.call("EndSession", project_id=project.id, session_id=session.id)
    events = events_until_done(presets, project.id, session.id)
    kinds = {e.type for e in events}
    assert EXPECTED[agent] <= kinds, kinds
    assert "stderr" not in kinds, [e.payload_json for e in events if e.type == "stderr"]
    final = presets.call("GetSession", project_id=project.id, session_id=session.id)
    assert final.exit_code == 0, final.detail
    text = " ".join(e.payload_json for e in events)
    assert "hello there" in text
    if agent in ("codex", "gemini"):
        result = json.loads(next(e for e in events if e.type == "result").payload_json)
        assert result["subtype"] == "success"
        assert result["is_error"] is False
    # The key reached the agent (the fakes exit 2 without it, and claude and codex print it back) ...
    if agent in ("claude", "codex"):
        assert "[secret]" in text
    # ... and appears in no event, answer, log line or stored byte.
    assert KEY not in text
    assert KEY not in str(final)
    assert KEY not in str(stored)
    assert KEY not in caplog.text
    assert KEY.encode() not in (presets.settings.data_dir / "runtime.db").read_bytes()
    # A one-shot CLI's session shows its command template, not the prompt spliced in.
    start = json.loads(events[0].payload_json)
    assert start["agent"] == agent
    assert "{prompt}" in start["agent_command"] or agent == "claude"


def test_secrets_are_write_only_and_reach_only_their_project(presets: Service) -> None:
    a = presets.call("CreateProject", name="owner", agent_command=["sh", "-c", "env"], agent_protocol="text")
    b = presets.call("CreateProject", name="neighbour", agent_command=["sh", "-c", "env"], agent_protocol="text")
    call(presets, "SetSecret", pb.SetSecretRequest(project_id=a.id, name="DEPLOY_TOKEN", value=KEY))
    call(presets, "SetSecret", pb.SetSecretRequest(project_id=a.id, name="OTHER_TOKEN", value="other-value-1234"))
    listed = call(presets, "ListSecrets", pb.ProjectRef(project_id=a.id)).secrets
    assert [s.name for s in listed] == ["DEPLOY_TOKEN", "OTHER_TOKEN"]
    assert set(pb.Secret.DESCRIPTOR.fields_by_name) == {"name", "created_at", "updated_at"}  # no value field
    assert list(call(presets, "ListSecrets", pb.ProjectRef(project_id=b.id)).secrets) == []

    mine = presets.call("SpawnSession", project_id=a.id)
    env_a = " ".join(e.payload_json for e in events_until_done(presets, a.id, mine.id))
    assert "DEPLOY_TOKEN=[secret]" in env_a
    assert KEY not in env_a
    theirs = presets.call("SpawnSession", project_id=b.id)
    env_b = " ".join(e.payload_json for e in events_until_done(presets, b.id, theirs.id))
    assert "DEPLOY_TOKEN" not in env_b

    # An override gives a variable another secret's value, for one spawn.
    override = call(
        presets,
        "SpawnSession",
        pb.SpawnSessionRequest(project_id=a.id, secret_overrides={"DEPLOY_TOKEN": "OTHER_TOKEN"}),
    )
    env_o = " ".join(e.payload_json for e in events_until_done(presets, a.id, override.id))
    assert "DEPLOY_TOKEN=[secret]" in env_o
    assert "OTHER_TOKEN=[secret]" in env_o

    missing = rpc_error(
        lambda: call(
            presets, "SpawnSession", pb.SpawnSessionRequest(project_id=a.id, secret_overrides={"DEPLOY_TOKEN": "NOPE"})
        )
    )
    assert missing.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "NOPE" in missing.details()
    assert "secret_set" in missing.details()
    gone = rpc_error(lambda: call(presets, "DeleteSecret", pb.SecretRef(project_id=a.id, name="NOPE")))
    assert gone.code() == grpc.StatusCode.NOT_FOUND
    assert "secret_list" in gone.details()
    bad = rpc_error(lambda: call(presets, "SetSecret", pb.SetSecretRequest(project_id=a.id, name="HOME", value="x")))
    assert bad.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "reserved" in bad.details()
    assert call(presets, "DeleteSecret", pb.SecretRef(project_id=a.id, name="OTHER_TOKEN")).name == "OTHER_TOKEN"
    assert [s.name for s in call(presets, "ListSecrets", pb.ProjectRef(project_id=a.id)).secrets] == ["DEPLOY_TOKEN"]
    assert KEY.encode() not in (presets.settings.data_dir / "runtime.db").read_bytes()


def test_bad_agent_choices_get_clear_errors(presets: Service) -> None:
    unknown = rpc_error(lambda: presets.call("CreateProject", name="x", agent="gpt-pilot"))
    assert unknown.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "claude, codex, gemini, opencode, aider" in unknown.details()
    both = rpc_error(lambda: presets.call("CreateProject", name="x", agent="codex", agent_command=["codex"]))
    assert both.code() == grpc.StatusCode.INVALID_ARGUMENT

    project = presets.call("CreateProject", name="keyless", agent="codex")
    keyless = rpc_error(lambda: presets.call("SpawnSession", project_id=project.id, prompt="hi"))
    assert keyless.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "OPENAI_API_KEY" in keyless.details()
    assert "secret_set" in keyless.details()
    assert list(presets.call("ListWorkspaces", project_id=project.id).workspaces) == []  # nothing was started

    call(presets, "SetSecret", pb.SetSecretRequest(project_id=project.id, name="OPENAI_API_KEY", value=KEY))
    no_prompt = rpc_error(lambda: presets.call("SpawnSession", project_id=project.id))
    assert no_prompt.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "prompt" in no_prompt.details()
    wrong = rpc_error(lambda: presets.call("SpawnSession", project_id=project.id, prompt="hi", agent="nope"))
    assert wrong.code() == grpc.StatusCode.INVALID_ARGUMENT

    # A failed turn is a result with is_error, as the scheduler reads it.
    failed = presets.call("SpawnSession", project_id=project.id, prompt="fail")
    events = events_until_done(presets, project.id, failed.id)
    result = json.loads(next(e for e in events if e.type == "result").payload_json)
    assert result["is_error"] is True
    assert result["result"] == "model refused"

    options = presets.call("ProjectOptions")
    by_name = {p.name: p for p in options.agents}
    assert list(by_name) == ["claude", "codex", "gemini", "opencode", "aider"]
    assert list(by_name["claude"].hosts) == ["api.anthropic.com"]
    assert "ANTHROPIC_BASE_URL" in by_name["claude"].base_url_env


def test_an_agent_that_cannot_start_fails_the_spawn_with_its_reason(presets: Service) -> None:
    project = presets.call("CreateProject", name="missing", agent_command=["no-such-agent", "-p"])
    error = rpc_error(lambda: presets.call("SpawnSession", project_id=project.id, prompt="hi"))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "exited with code 127" in error.details()
    assert "no-such-agent" in error.details()
    assert "not found" in error.details()
    assert "jarvis image build" in error.details()
    sessions = presets.call("ListSessions", project_id=project.id).sessions
    assert [(s.state, s.exit_code) for s in sessions] == [("exited", 127)]
    assert list(presets.call("ListWorkspaces", project_id=project.id).workspaces) == []

    crash = presets.call(
        "CreateProject", name="crash", agent_command=["sh", "-c", "echo boom >&2; exit 3"], agent_protocol="text"
    )
    error = rpc_error(lambda: presets.call("SpawnSession", project_id=crash.id))
    assert "exited with code 3: boom" in error.details()


def test_a_flooding_or_endless_agent_is_contained_and_others_run_on(presets: Service) -> None:
    calm = presets.call("CreateProject", name="calm", agent_command=["fake-agent"])
    calm_session = presets.call("SpawnSession", project_id=calm.id, prompt="hello")

    flood = presets.call("CreateProject", name="flood", agent_command=["yes", "x" * 1000], agent_protocol="text")
    started = time.monotonic()
    flooding = presets.call("SpawnSession", project_id=flood.id)
    events = events_until_done(presets, flood.id, flooding.id)
    assert time.monotonic() - started < 20
    assert any(e.type == "output_limit" for e in events)
    # 200 KB of 1 KB lines, then nothing more is stored (one read past the limit is cut too).
    assert len(events) < 210, (len(events), {e.type for e in events})
    ended = presets.call("GetSession", project_id=flood.id, session_id=flooding.id)
    assert ended.state == "ended"
    assert "more than 200000 bytes" in ended.detail
    # The calm project's agent was not disturbed: it still answers.
    before = presets.call("MessageSession", project_id=calm.id, session_id=calm_session.id, message="still there")
    answered = wait_for(
        presets, calm.id, calm_session.id, lambda e: "echo: still there" in e.payload_json, after=before.events
    )
    assert answered[-1].type in ("assistant", "result")

    endless = presets.call(
        "CreateProject", name="endless", agent_command=["sh", "-c", "echo up; sleep 1000"], agent_protocol="text"
    )
    forever = presets.call("SpawnSession", project_id=endless.id)
    events_until_done(presets, endless.id, forever.id, timeout=30)
    expired = presets.call("GetSession", project_id=endless.id, session_id=forever.id)
    assert expired.state == "ended"
    assert "ran longer than 8 s" in expired.detail
