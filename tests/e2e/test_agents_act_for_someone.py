"""Agents act for someone (issue 31 item 4): a real `jarvis up` with sign-in federated to a real OpenID provider
(npm oidc-provider) and a runtime driving the real Docker engine (DOCKER_HOST) with the fake-agent image.

Alice, signed in, spawns an agent session in her project: the agent's process carries a credential for her
(JARVIS_TOKEN, with JARVIS_URL), bound to that project and no wider than her token's scopes, naming the session.
Calls made with it are authorized as alice within the project only and audited as "alice via session S"; once
alice is disabled it is refused. A machine's `jv_` token spawns its agents with no such credential."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import docker
import httpx2
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet

from tests.e2e.orchestrator.conftest import runtime_env
from tests.e2e.test_people_standing import McpSession
from tests.support.docker_env import remove_managed
from tests.support.oauth_downstream import ProtectedServer, consent_in_browser, protected_server
from tests.support.per_person_oauth import signed_in
from tests.support.signin import signin_jarvis
from tests.support.stack import RunningJarvis

URL = "/mcp/orchestrator"
# Read the agent's environment from inside its container, as the agent's user (container exec).
ENVIRONMENTS = "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done 2>/dev/null"
AGENT_ENV = ["sh", "-c", ENVIRONMENTS + " | grep ^JARVIS_"]


@pytest.fixture(scope="module")
def jarvis(
    tmp_path_factory: pytest.TempPathFactory, image: str, engine: docker.DockerClient
) -> Iterator[RunningJarvis]:
    env = runtime_env(image, tmp_path_factory.mktemp("home"), JARVIS_AGGREGATOR_TOKEN_CACHE_SECONDS="1")
    env["JARVIS_DOWNSTREAM_OAUTH_ALLOW_HOSTS"] = '["localhost"]'  # the OAuth-protected server's authorization server
    with signin_jarvis(tmp_path_factory, env=env) as running:
        developers = ["--scope", "jarvis", "--scope", "orchestrator", "--scope", "profile"]
        running.cli("role", "set", "developers", "--group", "dev", *developers)
        yield running
    remove_managed(engine, running.data_dir)


_SESSIONS: dict[str, McpSession] = {}


def call(jarvis: RunningJarvis, token: str, tool: str, arguments: dict[str, Any]) -> httpx2.Response:
    """One tools/call with `token` on its MCP session at the orchestrator surface (opened at its first call)."""
    if token not in _SESSIONS:
        _SESSIONS[token] = McpSession(jarvis, token, URL)
    return _SESSIONS[token].call(tool, arguments)


def result(answer: httpx2.Response) -> dict[str, Any]:
    assert answer.status_code == 200, answer.text
    payload = answer.json()["result"]
    assert not payload.get("isError"), payload["content"][0]["text"]
    return dict(payload.get("structuredContent") or json.loads(payload["content"][0]["text"]))


def refused(answer: httpx2.Response) -> bool:
    payload = answer.json().get("result") or {} if answer.status_code == 200 else {}
    return (
        bool(payload.get("isError")) and (payload.get("structuredContent") or {}).get("error") == "insufficient_scope"
    )


def enable(jarvis: RunningJarvis, account: str) -> None:
    """Enable `account` again, and wait until Jarvis lets them in: each process reads a person's standing at most once
    per JARVIS_AGGREGATOR_TOKEN_CACHE_SECONDS, so the next test's first call must not meet the cached "disabled"."""
    jarvis.cli("user", "enable", account)
    token = signed_in(jarvis, account, URL, "orchestrator")
    opening = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": opening}
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    deadline = time.monotonic() + 15
    while httpx2.post(jarvis.url(URL), json=hello, headers=headers, timeout=30).status_code == 401:
        assert time.monotonic() < deadline, f"{account} was still refused 15 s after being enabled"
        time.sleep(0.2)


def agent_environment(jarvis: RunningJarvis, token: str, project_id: str) -> dict[str, str]:
    ran = result(call(jarvis, token, "container", {"action": "exec", "project_id": project_id, "command": AGENT_ENV}))
    pairs = (line.partition("=") for line in str(ran["stdout"]).splitlines())
    return {name: value for name, _, value in pairs}


def test_an_agent_session_acts_for_the_person_who_spawned_it(jarvis: RunningJarvis) -> None:
    alice = signed_in(jarvis, "alice", URL, "orchestrator")
    mine = result(call(jarvis, alice, "project", {"action": "create", "name": "alices"}))["created"]["id"]
    other = result(call(jarvis, alice, "project", {"action": "create", "name": "others"}))["created"]["id"]
    session = result(call(jarvis, alice, "session", {"action": "spawn", "project_id": mine}))["session"]

    env = agent_environment(jarvis, alice, mine)
    credential = env["JARVIS_TOKEN"]
    assert env["JARVIS_URL"] == jarvis.url(URL)
    assert env["JARVIS_SESSION_ID"] == session["id"]
    keys = KeySet.import_key_set(httpx2.get(jarvis.url("/oauth/jwks.json")).json())
    claims = jwt.decode(credential, keys).claims
    assert claims["sub"] == "alice"
    assert claims["session"] == session["id"]
    assert claims["scope"] == f"orchestrator@{mine}"  # her token's `orchestrator`, bound to the project
    assert jarvis.url(URL) in claims["aud"]
    assert jarvis.url("/mcp/jarvis") in claims["aud"]

    # The agent's output never shows it: told the credential, the fake agent echoes it masked.
    said = {"action": "message", "project_id": mine, "session_id": session["id"], "message": credential}
    result(call(jarvis, alice, "session", said))

    def echoed() -> list[dict[str, Any]]:
        page = {"action": "events", "project_id": mine, "session_id": session["id"], "wait": 2}
        shown = result(call(jarvis, alice, "session", page))["events"]
        return [e for e in shown if e["type"] != "input" and "echo: " in json.dumps(e)]

    deadline = time.monotonic() + 20
    while not (outputs := echoed()) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert outputs, "the agent never answered"
    assert credential not in json.dumps(outputs)

    # With it, the agent acts as alice within her project only.
    assert result(call(jarvis, credential, "session", {"action": "list", "project_id": mine}))["count"] >= 1
    assert refused(call(jarvis, credential, "project", {"action": "get", "project_id": other}))
    assert refused(call(jarvis, credential, "project", {"action": "list"}))  # names no project
    assert refused(call(jarvis, credential, "token", {"action": "create", "scope": "admin"}))

    # The audit log says who, through what: alice, via the session.
    def audited() -> list[dict[str, Any]]:
        out = jarvis.cli("audit", "export", "--token", "alice@example.test", "--tool", "session").stdout
        return [
            e for e in map(json.loads, out.splitlines()) if e["token_name"].endswith(f"via session {session['id']}")
        ]

    deadline = time.monotonic() + 20
    while not (entries := audited()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert entries, "no audit entry names alice via the session"
    assert {e["token_id"] for e in entries} == {"user:alice"}
    assert entries[0]["token_name"] == f"alice@example.test via session {session['id']}"

    # Disabled, alice's agent can no longer act for her.
    jarvis.cli("user", "disable", "alice")
    try:
        deadline = time.monotonic() + 15
        while (
            answer := call(jarvis, credential, "session", {"action": "list", "project_id": mine})
        ).status_code != 401:
            assert time.monotonic() < deadline, "the agent's credential still worked after alice was disabled"
            time.sleep(0.3)
        assert "disabled" in answer.headers["www-authenticate"]
    finally:
        enable(jarvis, "alice")


def test_an_agents_credential_lives_as_long_as_its_session(jarvis: RunningJarvis) -> None:
    """Good for the runtime's cap on a session (a day), not an hour, so an agent working all afternoon keeps its
    access (no agent CLI takes a new credential while it runs); and once its session ends the credential is refused
    within the cache interval (1 s here), whatever time it had left (decision 0058)."""
    alice = signed_in(jarvis, "alice", URL, "orchestrator")
    project = result(call(jarvis, alice, "project", {"action": "create", "name": "afternoon"}))["created"]["id"]
    session = result(call(jarvis, alice, "session", {"action": "spawn", "project_id": project}))["session"]
    credential = agent_environment(jarvis, alice, project)["JARVIS_TOKEN"]
    keys = KeySet.import_key_set(httpx2.get(jarvis.url("/oauth/jwks.json")).json())
    claims = jwt.decode(credential, keys).claims
    assert claims["exp"] - claims["iat"] == 86400  # JARVIS_AGGREGATOR_AGENT_CREDENTIAL_SECONDS's default
    assert result(call(jarvis, credential, "session", {"action": "list", "project_id": project}))["count"] >= 1

    ended = {"action": "end", "project_id": project, "session_id": session["id"], "force": True}
    assert result(call(jarvis, alice, "session", ended))["session"]["state"] in ("ended", "exited")
    deadline = time.monotonic() + 15
    while (answer := call(jarvis, credential, "session", {"action": "list", "project_id": project})).status_code != 401:
        assert time.monotonic() < deadline, "the agent's credential still worked after its session ended"
        time.sleep(0.3)
    assert f"agent session {session['id']} is over" in answer.headers["www-authenticate"]
    # Alice's own token is untouched: only the session's credential ended with it.
    assert result(call(jarvis, alice, "session", {"action": "list", "project_id": project}))["count"] >= 1


@pytest.fixture(scope="module")
def notes() -> Iterator[ProtectedServer]:
    """An MCP server behind its own authorization server, where each person connects their own account."""
    with protected_server() as server:
        yield server


def result_of(answer: httpx2.Response) -> dict[str, Any]:
    """The result of a request answered as JSON or on an SSE stream (a profile's calls): `tool_text` reads a call's."""
    assert answer.status_code == 200, answer.text
    if answer.headers.get("content-type", "").startswith("text/event-stream"):
        messages = [json.loads(line[5:]) for line in answer.text.splitlines() if line.startswith("data:")]
        return dict(next(m for m in messages if "result" in m)["result"])
    return dict(answer.json()["result"])


def tool_text(answer: httpx2.Response) -> tuple[bool, str]:
    return bool((result := result_of(answer)).get("isError")), str(result["content"][0]["text"])


def test_an_agents_downstream_calls_use_its_persons_own_credentials(
    jarvis: RunningJarvis, notes: ProtectedServer
) -> None:
    """Issue 32 item 5: alice connects an OAuth-protected server with her own account, then spawns an agent; the
    agent's calls to that server go out with alice's grant from Jarvis's vault (the server sees alice), while its
    container holds only its own Jarvis credential, none of alice's downstream tokens."""
    admin = McpSession(jarvis, jarvis.create_token("admin", name="notes-admin"), "/mcp/jarvis")
    try:
        for tool, arguments in (
            ("jarvis_config", {"action": "set", "key": "servers.oauth", "value": ["notes"]}),
            ("jarvis_server", {"action": "create", "name": "notes", "type": "streamable-http", "url": notes.url}),
            ("jarvis_profile", {"action": "create", "name": "notes", "servers": ["notes"]}),
        ):
            assert not tool_text(admin.call(tool, arguments))[0]
    finally:
        admin.close()
    profile = "/mcp/profile/notes"
    hers = McpSession(jarvis, signed_in(jarvis, "alice", profile, "profile"), profile)
    try:
        failed, asked = tool_text(hers.call("notes__whoami"))
        link = re.search(r"(http://\S+/oauth/downstream/start\?flow=[\w-]+)", asked)
        assert failed, asked
        assert link is not None, asked
        consent_in_browser(link.group(1), "alice-at-notes", signed_in_as="alice").close()
        assert tool_text(hers.call("notes__whoami")) == (False, "alice-at-notes")
    finally:
        hers.close()

    # `profile` alone is OpenID's scope, which Jarvis leaves out of what a client asks for: ask for the one profile.
    alice = signed_in(jarvis, "alice", URL, "orchestrator profile:notes")
    project = result(call(jarvis, alice, "project", {"action": "create", "name": "noted"}))["created"]["id"]
    result(call(jarvis, alice, "session", {"action": "spawn", "project_id": project}))
    env = agent_environment(jarvis, alice, project)
    credential = env["JARVIS_TOKEN"]
    keys = KeySet.import_key_set(httpx2.get(jarvis.url("/oauth/jwks.json")).json())
    claims = jwt.decode(credential, keys).claims
    assert claims["scope"].split() == [f"orchestrator@{project}", "profile:notes"]
    assert jarvis.url(profile) in claims["aud"]

    agents = McpSession(jarvis, credential, profile)
    try:
        listed = result_of(agents.post({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))["tools"]
        assert "notes__whoami" in {t["name"] for t in listed}  # issue 45: her agent is listed her tools, as she is
        assert tool_text(agents.call("notes__whoami")) == (False, "alice-at-notes")  # no consent asked: hers
    finally:
        agents.close()
    # Every process's whole environment in the container holds none of the tokens the notes server issued.
    everything = {"action": "exec", "project_id": project, "command": ["sh", "-c", ENVIRONMENTS]}
    ran = result(call(jarvis, alice, "container", everything))
    issued = [*notes.accounts.access, *notes.accounts.refresh]
    assert issued, "the notes server issued no token"
    assert credential in str(ran["stdout"])  # the dump is whole: the agent's own credential is in it
    assert not [token for token in issued if token in str(ran["stdout"])]


def test_a_machines_agent_gets_no_credential(jarvis: RunningJarvis) -> None:
    machine = jarvis.create_token("admin", name="ci")
    project = result(call(jarvis, machine, "project", {"action": "create", "name": "ci"}))["created"]["id"]
    result(call(jarvis, machine, "session", {"action": "spawn", "project_id": project}))
    env = agent_environment(jarvis, machine, project)
    assert "JARVIS_TOKEN" not in env
    assert "JARVIS_SESSION_ID" in env


def test_an_agent_makes_no_schedule_unless_its_persons_role_names_the_tool(jarvis: RunningJarvis) -> None:
    """Issue 44, finding 12: a schedule acts for its owner on every run, so one an agent made would outlive the agent's
    session and its credential. With `orchestrator` alone, alice's agent can neither create nor trigger one; bob's role
    names `orchestrator:schedule`, so his agent may."""
    alice = signed_in(jarvis, "alice", URL, "orchestrator")
    project = result(call(jarvis, alice, "project", {"action": "create", "name": "agent-cron"}))["created"]["id"]
    result(call(jarvis, alice, "session", {"action": "spawn", "project_id": project}))
    agent = agent_environment(jarvis, alice, project)["JARVIS_TOKEN"]
    created = {"action": "create", "cron": "0 3 * * *", "prompt": "again", "targets": [project], "name": "agent-made"}
    answer = call(jarvis, agent, "schedule", created).json()["result"]
    assert answer.get("isError"), answer
    assert "an agent may not create schedules" in answer["content"][0]["text"]
    assert "orchestrator:schedule" in answer["content"][0]["text"]
    hers = result(call(jarvis, alice, "schedule", {**created, "name": "hers", "enabled": False}))["created"]["schedule"]
    triggered = call(jarvis, agent, "schedule", {"action": "trigger", "schedule_id": hers["id"]}).json()["result"]
    assert triggered.get("isError"), triggered
    assert "an agent may not trigger schedules" in triggered["content"][0]["text"]
    assert result(call(jarvis, agent, "schedule", {"action": "list", "targets": [project]}))["count"] == 1  # reads

    jarvis.cli(
        "role", "set", "ops-schedulers", "--group", "ops", "--scope", "orchestrator", "--scope", "orchestrator:schedule"
    )
    bob = signed_in(jarvis, "bob", URL, "orchestrator")
    his = result(call(jarvis, bob, "project", {"action": "create", "name": "bobs-cron"}))["created"]["id"]
    result(call(jarvis, bob, "session", {"action": "spawn", "project_id": his}))
    his_agent = agent_environment(jarvis, bob, his)["JARVIS_TOKEN"]
    made = {**created, "targets": [his], "name": "bobs-agent-made", "enabled": False}
    assert result(call(jarvis, his_agent, "schedule", made))["created"]["schedule"]["name"] == "bobs-agent-made"


def test_a_schedule_whose_owner_is_disabled_stops_firing_and_says_why(jarvis: RunningJarvis) -> None:
    alice = signed_in(jarvis, "alice", URL, "orchestrator")
    admin = jarvis.create_token("admin", name="ops")
    project = result(call(jarvis, alice, "project", {"action": "create", "name": "nightly"}))["created"]["id"]
    created = {"action": "create", "cron": "0 3 * * *", "prompt": "tidy up", "targets": [project], "name": "nightly"}
    schedule = result(call(jarvis, alice, "schedule", created))["created"]["schedule"]
    assert schedule["created_by"] == "alice@example.test (user:alice)"
    assert schedule["enabled"] is True
    assert schedule["next_fire_at"]

    def status() -> dict[str, Any]:
        shown = result(call(jarvis, admin, "schedule", {"action": "get", "schedule_id": schedule["id"]}))
        return dict(shown["schedule"])

    jarvis.cli("user", "disable", "alice@example.test")
    try:
        deadline = time.monotonic() + 30
        while (now := status())["enabled"]:
            assert time.monotonic() < deadline, "alice's schedule still fires after she was disabled"
            time.sleep(0.5)
        assert now.get("next_fire_at") is None  # beat fires it no more
        assert "its owner alice@example.test is disabled" in now["paused_reason"]
    finally:
        enable(jarvis, "alice")
    # Enabled again, alice's schedule waits for someone to enable it, which clears the reason.
    assert status()["enabled"] is False
    again = result(
        call(jarvis, admin, "schedule", {"action": "update", "schedule_id": schedule["id"], "enabled": True})
    )
    assert again["updated"]["schedule"]["enabled"] is True
    assert status().get("paused_reason", "") == ""


def test_a_scheduled_run_acts_for_the_schedules_owner(jarvis: RunningJarvis) -> None:
    """The run's agent carries a credential for alice, who owns the schedule (a `jva_` secret the scheduler stored in
    the registry): her calls, bound to the run's project, audited via the run's session, refused once disabled."""
    alice = signed_in(jarvis, "alice", URL, "orchestrator")
    project = result(call(jarvis, alice, "project", {"action": "create", "name": "scheduled"}))["created"]["id"]
    other = result(call(jarvis, alice, "project", {"action": "create", "name": "unscheduled"}))["created"]["id"]
    created = {
        "action": "create",
        "cron": "0 3 * * *",
        "prompt": "sleep 30",  # the fake agent works that long: its process (and environment) is there to read
        "targets": [project],
        "enabled": False,
    }
    schedule = result(call(jarvis, alice, "schedule", created))["created"]["schedule"]
    result(call(jarvis, alice, "schedule", {"action": "trigger", "schedule_id": schedule["id"]}))

    def running_session() -> str:
        shown = result(call(jarvis, alice, "schedule", {"action": "get", "schedule_id": schedule["id"]}))
        runs = [r for r in shown.get("recent_runs", []) if r.get("session_id")]
        return str(runs[0]["session_id"]) if runs else ""

    deadline = time.monotonic() + 60
    while not (session_id := running_session()):
        assert time.monotonic() < deadline, "the triggered run spawned no session"
        time.sleep(0.5)
    env = agent_environment(jarvis, alice, project)
    assert env["JARVIS_SESSION_ID"] == session_id
    credential = env["JARVIS_TOKEN"]
    assert credential.startswith("jva_")

    assert result(call(jarvis, credential, "session", {"action": "list", "project_id": project}))["count"] >= 1
    assert refused(call(jarvis, credential, "project", {"action": "get", "project_id": other}))

    def audited() -> list[dict[str, Any]]:
        out = jarvis.cli("audit", "export", "--token", "user:alice", "--tool", "session").stdout
        return [e for e in map(json.loads, out.splitlines()) if e["token_name"].endswith(f"via session {session_id}")]

    deadline = time.monotonic() + 20
    while not (entries := audited()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert entries, "no audit entry names alice via the run's session"
    assert entries[0]["token_name"] == f"alice@example.test via session {session_id}"

    jarvis.cli("user", "disable", "alice")
    try:
        deadline = time.monotonic() + 15
        while call(jarvis, credential, "session", {"action": "list", "project_id": project}).status_code != 401:
            assert time.monotonic() < deadline, "the run's credential still worked after alice was disabled"
            time.sleep(0.3)
        # A run of her schedule triggered now does not start, and says why.
        admin = jarvis.create_token("admin", name="ops2")
        ended = {"action": "end", "project_id": project, "session_id": session_id, "force": True}
        result(call(jarvis, admin, "session", ended))  # the first run ends, so the next one is not skipped for it
        deadline = time.monotonic() + 30
        while result(call(jarvis, admin, "schedule", {"action": "get", "schedule_id": schedule["id"]}))["recent_runs"][
            0
        ]["state"] in ("queued", "running"):
            assert time.monotonic() < deadline, "the first run never ended"
            time.sleep(0.5)
        # Its run over, the run's credential is revoked (not merely refused for alice's standing).
        deadline = time.monotonic() + 15
        while "its run is over" not in call(
            jarvis, credential, "session", {"action": "list", "project_id": project}
        ).headers.get("www-authenticate", ""):
            assert time.monotonic() < deadline, "the run's credential outlived its run"
            time.sleep(0.3)
        result(call(jarvis, admin, "schedule", {"action": "trigger", "schedule_id": schedule["id"]}))

        def refused_runs() -> list[dict[str, Any]]:
            shown = result(call(jarvis, admin, "schedule", {"action": "get", "schedule_id": schedule["id"]}))
            return list(shown.get("recent_runs", []))

        def refused_run() -> str:
            errors = [r.get("error", "") for r in refused_runs() if r.get("state") == "failed"]
            return next((e for e in errors if "disabled" in e), "")

        deadline = time.monotonic() + 30
        while not (why := refused_run()):
            assert time.monotonic() < deadline, f"a run of a disabled owner's schedule started: {refused_runs()}"
            time.sleep(0.5)
        assert "owner alice@example.test is disabled" in why
    finally:
        enable(jarvis, "alice")
