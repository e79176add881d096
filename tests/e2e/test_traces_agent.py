"""Traces to the last hop (issue 50 test 3, decision 0066): a schedule's fire, its run, the session it spawns and that
agent's tool call back into Jarvis are one trace, though the agent sends no trace context of its own (as agent CLIs'
MCP clients do not). The run's credential (`jva_`, which the agent sends on every call) was minted in the run's span;
Jarvis parents a request made with it to that span. Likewise a session a person spawns: its JWT credential carries the
trace of her `session` call.

A real `jarvis up` with sign-in (alice owns the schedule, so its runs carry a credential for her) exports real
OTLP/HTTP (tests/support/otlp_receiver.py). The fake agent, in a container without a network on the real Docker
engine, calls Jarvis over HTTP through the runtime's egress proxy: `jarvis.test` is the test hooks' name for the
host's loopback (`egress_resolve`, `egress_internal_hosts`), and the project allows it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from tests.e2e.orchestrator.conftest import runtime_env
from tests.e2e.test_agents_act_for_someone import URL, call, result
from tests.support.console import personal_token
from tests.support.docker_env import egress_agent_image, remove_managed
from tests.support.otlp_receiver import ReceivedSpan, Receiver, otlp_receiver
from tests.support.per_person_oauth import signed_in
from tests.support.signin import signin_jarvis
from tests.support.stack import RunningJarvis

HOST = "jarvis.test"  # the name the agent reaches Jarvis by, through the egress proxy


@pytest.fixture(scope="module")
def traced(
    tmp_path_factory: pytest.TempPathFactory, engine: docker.DockerClient
) -> Iterator[tuple[RunningJarvis, Receiver]]:
    with otlp_receiver() as receiver:
        env = runtime_env(
            egress_agent_image(engine),  # with the egress bridge (socat)
            tmp_path_factory.mktemp("home"),
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
            OTEL_BSP_SCHEDULE_DELAY="100",
            JARVIS_RUNTIME_EGRESS_RESOLVE=json.dumps({HOST: ["127.0.0.1"]}),
            JARVIS_RUNTIME_EGRESS_INTERNAL_HOSTS=json.dumps([HOST]),
            JARVIS_ALLOWED_HOSTS=json.dumps([f"{HOST}:*"]),
            JARVIS_SCHEDULER_MIN_INTERVAL_SECONDS="1",
            JARVIS_SCHEDULER_BEAT_INTERVAL_SECONDS="0.2",
        )
        with signin_jarvis(tmp_path_factory, env=env) as running:
            running.cli("role", "set", "developers", "--group", "dev", "--scope", "jarvis", "--scope", "orchestrator")
            yield running, receiver
        remove_managed(engine, running.data_dir)


def ancestry(span: ReceivedSpan, spans: list[ReceivedSpan]) -> list[str]:
    """The names of `span` and its ancestors among `spans`, nearest first."""
    by_id = {s.span_id: s for s in spans}
    names = []
    current: ReceivedSpan | None = span
    while current is not None:
        names.append(current.name)
        current = by_id.get(current.parent_id)
    return names


def only(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, (name, [s.name for s in spans])
    return found[0]


def agent_said(jarvis: RunningJarvis, token: str, project: str, session_id: str) -> str:
    page = {"action": "events", "project_id": project, "session_id": session_id, "wait": 2}
    return json.dumps(result(call(jarvis, token, "session", page))["events"])


def test_an_agents_call_back_into_jarvis_is_in_the_trace_of_the_fire_that_started_it(
    traced: tuple[RunningJarvis, Receiver],
) -> None:
    jarvis, receiver = traced
    alice = signed_in(jarvis, "alice", URL, "orchestrator")
    port = jarvis.url("").rsplit(":", 1)[1].strip("/")
    allowed = {"action": "create", "name": "traced-agent", "egress_allow": [f"{HOST}:{port}"]}
    project = result(call(jarvis, alice, "project", allowed))["created"]["id"]
    # The agent lists its project's sessions at the orchestrator surface, as alice (its run's credential).
    prompt = f"call http://{HOST}:{port}{URL} session list"
    created = {"action": "create", "cron": "* * * * * */2", "prompt": prompt, "targets": [project]}
    schedule = result(call(jarvis, alice, "schedule", created))["created"]["schedule"]

    def run_session() -> str:
        shown = result(call(jarvis, alice, "schedule", {"action": "get", "schedule_id": schedule["id"]}))
        return next((str(r["session_id"]) for r in shown.get("recent_runs", []) if r.get("session_id")), "")

    deadline = time.monotonic() + 90
    while not (session_id := run_session()):
        assert time.monotonic() < deadline, "no run spawned a session"
        time.sleep(0.5)
    result(call(jarvis, alice, "schedule", {"action": "update", "schedule_id": schedule["id"], "enabled": False}))

    def agents_call() -> ReceivedSpan | None:
        with receiver.lock:
            spans = list(receiver.spans)
        fires = {s.trace_id for s in spans if s.name == "schedule fire"}
        return next((s for s in spans if s.name == "tools/call session" and s.trace_id in fires), None)

    deadline = time.monotonic() + 60
    while (served := agents_call()) is None:
        said = agent_said(jarvis, alice, project, session_id)
        assert time.monotonic() < deadline, f"no call of the agent's in a fire's trace; the agent said {said}"
        time.sleep(0.5)
    deadline = time.monotonic() + 30
    while "called session:" not in (said := agent_said(jarvis, alice, project, session_id)):
        assert time.monotonic() < deadline, f"the agent never told its call's outcome: {said}"
        time.sleep(0.5)
    assert "called session: answered" in said, said[said.find("called session") :][:1600]

    # The run's span ends with the run (the scheduler ends the session after the agent's result): the whole chain.
    spans = receiver.wait_for(lambda s: any(x.name == "scheduler run" for x in s), served.trace_id, timeout=60)
    chain = ancestry(served, spans)
    assert (chain[0], chain[-1]) == ("tools/call session", "schedule fire"), chain
    assert "scheduler run" in chain, chain
    tokens = [s for s in spans if "jva_" in json.dumps(s.attributes)]
    assert not tokens, tokens  # the credential that carried the trace is in no attribute
    assert not any(prompt in json.dumps(s.attributes) for s in spans)


@pytest.mark.parametrize("credential", ["sign-in", "personal token"])
def test_an_agent_a_person_spawned_calls_back_in_the_trace_of_the_spawn(
    traced: tuple[RunningJarvis, Receiver], credential: str, tmp_path: Path
) -> None:
    """The session's JWT credential carries the trace of alice's `session` call that spawned it, whether she called
    with her client's sign-in or with a token of her own (decision 0071: it speaks for her, so her agent gets her
    credential; a machine's token would give it none)."""
    jarvis, receiver = traced
    if credential == "sign-in":
        alice = signed_in(jarvis, "alice", URL, "orchestrator")
    else:
        alice = personal_token(jarvis, "alice", "alice-spawner", ["orchestrator"], tmp_path)
    port = jarvis.url("").rsplit(":", 1)[1].strip("/")
    allowed = {"action": "create", "name": f"spawned-agent-{credential[:4]}", "egress_allow": [f"{HOST}:{port}"]}
    project = result(call(jarvis, alice, "project", allowed))["created"]["id"]
    spawn = {"action": "spawn", "project_id": project, "prompt": f"call http://{HOST}:{port}{URL} session list"}
    spawned_at = time.time_ns()
    session_id = result(call(jarvis, alice, "session", spawn))["session"]["id"]

    def agents_call() -> ReceivedSpan | None:
        with receiver.lock:
            spans = list(receiver.spans)
        # Alice's requests begin traces of their own (she sends none); the agent's continues one.
        return next(
            (s for s in spans if s.name == "tools/call session" and s.parent_id and s.start_ns > spawned_at), None
        )

    deadline = time.monotonic() + 60
    while (served := agents_call()) is None:
        said = agent_said(jarvis, alice, project, session_id)
        assert time.monotonic() < deadline, f"no call of the agent's in a spawn's trace; the agent said {said}"
        time.sleep(0.5)
    spans = receiver.trace(served.trace_id)
    chain = ancestry(served, spans)
    # The agent's request, under the span its credential was minted in, in the pipeline of alice's spawn call.
    assert (chain[0], chain[-2:]) == ("tools/call session", ["call session", "tools/call session"]), chain
    spawned = only(spans, "runtime/SpawnSession")
    assert served.parent_id == spawned.parent_id  # the spawn's gRPC call is the sibling of the agent's call
