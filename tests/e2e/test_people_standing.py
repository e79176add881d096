"""People as Jarvis knows them (issue 31 items 3 and 4), at a real `jarvis up` whose sign-in is federated to a real
OpenID provider (npm oidc-provider) on loopback.

Disabling a person reaches everything they hold at once: their MCP session ends, their access token is refused (401)
on every surface, their refresh token is revoked (and stays so after an enable), while another person is
unaffected. Rate limits and the audit log key on the person, and the audit log says through what they called."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from tests.support.signin import sign_in_via_jarvis, signin_jarvis
from tests.support.stack import RunningJarvis

ENV = {
    "JARVIS_AGGREGATOR_TOKEN_CACHE_SECONDS": "1",
    "JARVIS_AGGREGATOR_RATE_LIMIT_TOOLS": json.dumps({"jarvis_server": {"per_second": 0.001, "burst": 2}}),
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def signin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    with signin_jarvis(tmp_path_factory, env=ENV) as running:
        yield running


def _rpc(method: str, params: dict[str, Any] | None = None, rid: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}


class McpSession:
    """One MCP session over plain HTTP with a bearer token: initialize, then calls carrying its session id."""

    def __init__(self, jarvis: RunningJarvis, token: str, path: str = "/mcp/jarvis") -> None:
        self.url = jarvis.url(path)
        self.http = httpx2.Client(timeout=120)
        self.token = token
        init = _rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}})
        opened = self.post(init, session=False)
        assert opened.status_code == 200, opened.text
        self.id = opened.headers["mcp-session-id"]
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, message: dict[str, Any], session: bool = True) -> httpx2.Response:
        headers = {**ACCEPT, "Authorization": f"Bearer {self.token}"}
        if session:
            headers["Mcp-Session-Id"] = self.id
        return self.http.post(self.url, json=message, headers=headers)

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> httpx2.Response:
        return self.post(_rpc("tools/call", {"name": tool, "arguments": arguments or {}}, rid=2))

    def close(self) -> None:
        self.http.close()


def _signed_in(jarvis: RunningJarvis, account: str) -> tuple[str, dict[str, Any]]:
    client_id, tokens, _ = sign_in_via_jarvis(jarvis, account, "jarvis offline_access")
    assert tokens.status_code == 200, tokens.text
    return client_id, tokens.json()


def _until(check: Any, seconds: float = 15.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        outcome = check()
        if outcome or time.monotonic() > deadline:
            return outcome
        time.sleep(0.2)


def test_disabling_a_person_ends_their_session_and_refuses_their_tokens(signin: RunningJarvis) -> None:
    alice_client, alice = _signed_in(signin, "alice")
    _, bob = _signed_in(signin, "bob")
    alices, bobs = McpSession(signin, alice["access_token"]), McpSession(signin, bob["access_token"])
    try:
        assert alices.call("jarvis_check_status").status_code == 200
        assert bobs.call("jarvis_check_status").status_code == 200

        signin.cli("user", "disable", "alice@example.test")
        try:
            # Her next call on the open session is refused, within the standing cache's life (1 s here).
            refused = _until(lambda: (r := alices.call("jarvis_check_status")).status_code == 401 and r)
            assert refused, "alice's session still answered after she was disabled"
            assert "disabled" in refused.headers["www-authenticate"]
            # Her access token opens no new session either, nor works anywhere else.
            fresh = httpx2.post(
                signin.url("/mcp/jarvis"),
                json=_rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {}}),
                headers={**ACCEPT, "Authorization": f"Bearer {alice['access_token']}"},
            )
            assert fresh.status_code == 401
            # Her refresh token is revoked (the token endpoint's refusal is OAuth's invalid_grant).
            form = {"grant_type": "refresh_token", "refresh_token": alice["refresh_token"], "client_id": alice_client}
            refreshed = httpx2.post(signin.url("/oauth/token"), data=form)
            assert refreshed.status_code == 400
            assert refreshed.json()["error"] == "invalid_grant"
            # Bob is unaffected, on his open session.
            assert bobs.call("jarvis_check_status").status_code == 200
        finally:
            signin.cli("user", "enable", "alice")

        # Enabled again, alice's old token and refresh token stay dead (issued before the disable), and the session
        # she had was ended, not merely refused: with a new token, its id is unknown (404).
        time.sleep(1.5)
        assert alices.call("jarvis_check_status").status_code == 401
        form = {"grant_type": "refresh_token", "refresh_token": alice["refresh_token"], "client_id": alice_client}
        assert httpx2.post(signin.url("/oauth/token"), data=form).status_code == 400
        _, again = _signed_in(signin, "alice")
        alices.token = again["access_token"]
        assert alices.call("jarvis_check_status").status_code == 404
        assert McpSession(signin, again["access_token"]).call("jarvis_check_status").status_code == 200
        users = {u["subject"]: u for u in json.loads(signin.cli("user", "list").stdout)}
        assert users["alice"]["disabled"] is False
        assert users["alice"]["not_before"] > 0
    finally:
        alices.close()
        bobs.close()


def _audit(jarvis: RunningJarvis, who: str, count: int) -> list[dict[str, Any]]:
    """The audit entries of `who` (a person's email), once at least `count` have landed (usage flushes every 2 s)."""

    def entries() -> list[dict[str, Any]]:
        out = jarvis.cli("audit", "export", "--token", who, "--tool", "jarvis_server").stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    found: list[dict[str, Any]] = _until(lambda: len(got := entries()) >= count and got, 20.0) or entries()
    return found


def test_rate_limits_and_the_audit_log_key_on_the_person_and_say_through_what(signin: RunningJarvis) -> None:
    """Two people, alice with two clients: her calls share one bucket whichever client makes them, bob's bucket is
    his own; the audit log names each call's person and the client it came through."""
    signin.cli(
        "role", "set", "operators", "--group", "ops", "--scope", "jarvis:jarvis_check_status", "--scope",
        "jarvis:jarvis_server",
    )  # fmt: skip
    laptop, alice_laptop = _signed_in(signin, "alice")
    editor, alice_editor = _signed_in(signin, "alice")
    bobs_client, bob = _signed_in(signin, "bob")
    sessions = [McpSession(signin, t["access_token"]) for t in (alice_laptop, alice_editor, bob)]
    on_laptop, in_editor, bobs = sessions
    try:

        def outcome(session: McpSession) -> str:
            answer = session.call("jarvis_server", {"action": "list"})
            assert answer.status_code == 200, answer.text
            result = answer.json()["result"]
            return str((result.get("structuredContent") or {}).get("error", "")) if result.get("isError") else "ok"

        # The burst is 2 (JARVIS_AGGREGATOR_RATE_LIMIT_TOOLS): alice's third call, from her other client, is refused.
        assert [outcome(on_laptop), outcome(in_editor), outcome(in_editor)] == ["ok", "ok", "rate_limited"]
        assert outcome(bobs) == "ok"  # bob's own bucket

        alices = _audit(signin, "alice@example.test", 3)
        named = [(e["token_id"], e["token_name"], e["outcome"]) for e in alices[:3]]
        assert named == [
            ("user:alice", f"alice@example.test via token {editor}", "rate_limited"),
            ("user:alice", f"alice@example.test via token {editor}", "ok"),
            ("user:alice", f"alice@example.test via token {laptop}", "ok"),
        ]
        bobs_entries = _audit(signin, "bob@example.test", 1)
        assert [(e["token_id"], e["token_name"]) for e in bobs_entries] == [
            ("user:bob", f"bob@example.test via token {bobs_client}")
        ]
        # By subject too: user:<subject> is the id of every call the person makes.
        assert len(_audit(signin, "user:alice", 3)) == len(alices)
    finally:
        for session in sessions:
            session.close()
        signin.cli("role", "set", "operators", "--group", "ops", "--scope", "jarvis:jarvis_check_status")


def _tool(session: McpSession, tool: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
    """(whether it was a tool error, its JSON or, for an error, its text) of one call on `session`."""
    answer = session.call(tool, arguments)
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    text = result["content"][0]["text"]
    return (True, text) if result.get("isError") else (False, json.loads(text))


def test_an_admin_edits_people_and_roles_over_mcp(signin: RunningJarvis) -> None:
    """The admin surface's `user` and `role` tools do what `jarvis user` and `jarvis role` do, on the same records: a
    role set over MCP gives bob its scope at his next sign-in, a disable over MCP refuses his open session, and a
    token without `admin` may do none of it: /mcp/admin refuses it at the door (decision 0069)."""
    admin = McpSession(signin, signin.create_token("admin", name="people-admin"), "/mcp/admin")
    plain = McpSession(signin, signin.create_token("orchestrator", "read", name="not-admin"), "/mcp/orchestrator")
    try:
        listing = plain.post(_rpc("tools/list", rid=3)).json()["result"]["tools"]
        assert "token" in {t["name"] for t in listing}
        assert not {"user", "role"} & {t["name"] for t in listing}
        outside = httpx2.post(
            signin.url("/mcp/admin"),
            json=_rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}),
            headers={**ACCEPT, "Authorization": f"Bearer {plain.token}"},
            timeout=30,
        )
        assert outside.status_code == 403, outside.text
        assert 'scope="admin"' in outside.headers["www-authenticate"]
        admins = admin.post(_rpc("tools/list", rid=3)).json()["result"]["tools"]
        assert {"user", "role"} <= {t["name"] for t in admins}

        failed, role = _tool(
            admin,
            "role",
            {"action": "set", "name": "auditors", "groups": ["ops"], "scopes": ["jarvis:jarvis_server:list"]},
        )
        assert not failed, role
        assert role == {"name": "auditors", "groups": ["ops"], "users": [], "scopes": ["jarvis:jarvis_server:list"]}
        # The CLI reads the same record.
        assert {"name": "auditors", **{k: role[k] for k in ("groups", "users", "scopes")}} in json.loads(
            signin.cli("role", "list").stdout
        )
        failed, bad = _tool(admin, "role", {"action": "set", "name": "x", "groups": ["ops"], "scopes": ["nope:"]})
        assert failed
        assert "invalid scope" in str(bad), bad

        # bob (group ops) now signs in with the role's scope, and may list servers.
        _, bob = _signed_in(signin, "bob")
        bobs = McpSession(signin, bob["access_token"])
        try:
            assert "jarvis:jarvis_server:list" in bob["scope"].split()
            assert not _tool(bobs, "jarvis_server", {"action": "list"})[0]

            failed, listed = _tool(admin, "user", {"action": "list"})
            assert not failed
            assert {u["email"]: u["disabled"] for u in listed["users"]}["bob@example.test"] is False

            failed, changed = _tool(admin, "user", {"action": "disable", "who": "bob@example.test"})
            assert not failed
            assert changed["user"]["disabled"] is True, changed
            refused = _until(lambda: (r := bobs.call("jarvis_check_status")).status_code == 401 and r)
            assert refused, "bob's session still answered after an admin disabled him over MCP"
            users = {u["subject"]: u for u in json.loads(signin.cli("user", "list").stdout)}
            assert users["bob"]["disabled"] is True

            failed, changed = _tool(admin, "user", {"action": "enable", "who": "bob"})
            assert not failed
            assert changed["user"]["disabled"] is False
            failed, missing = _tool(admin, "user", {"action": "disable", "who": "nobody@example.test"})
            assert failed
            assert "no user 'nobody@example.test'" in str(missing), missing
        finally:
            bobs.close()
            signin.cli("user", "enable", "bob")

        failed, deleted = _tool(admin, "role", {"action": "delete", "name": "auditors"})
        assert not failed
        assert deleted["deleted"] == "auditors"
        failed, gone = _tool(admin, "role", {"action": "delete", "name": "auditors"})
        assert failed
        assert "no role 'auditors'" in str(gone)
        assert "auditors" not in {r["name"] for r in json.loads(signin.cli("role", "list").stdout)}
    finally:
        admin.close()
        plain.close()
