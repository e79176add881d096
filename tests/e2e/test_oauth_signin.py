"""People sign in (issue 31 item 2) at a real `jarvis up` whose sign-in is federated to a real OpenID provider (npm
oidc-provider) on loopback: the authorization server is mounted, its state is in Jarvis's registry, roles come from
`jarvis role set`, and the token it issues is signed by the key its JWKS publishes, bound to the surface asked for.

The MCP python SDK's OAuth client signs in through item 1's protected resource metadata and calls tools with the
token. The SDK asks for the scope the 401 names (`jarvis`); bob's role is narrower (`jarvis:jarvis_check_status`),
so he is granted the intersection, that one tool (decision 0055), and sees only it. Claude Code's `mcp list`
finds the sign-in from the 401 and says the server needs authentication."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet

from tests.support.agent_clients import client_env, mcp_list
from tests.support.downstream import CONFORMANCE, NODE
from tests.support.signin import Person, sign_in_via_jarvis, signed_in_client, signin_jarvis
from tests.support.stack import RunningJarvis, free_port, result_json

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def signin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    """Jarvis requiring tokens, its sign-in federated to the provider; roles: dev -> jarvis, ops -> one tool."""
    with signin_jarvis(tmp_path_factory) as running:
        yield running


async def test_alice_signs_in_and_uses_her_tools(signin: RunningJarvis) -> None:
    alice = Person("alice")
    try:
        async with signed_in_client(signin, alice) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"jarvis_server", "jarvis_check_status"} <= names
            assert result_json(await client.call_tool("jarvis_check_status", {}))["healthy"] is True
        assert alice.last_page is not None
        assert "e2e MCP client" in alice.last_page.text
        assert "<code>jarvis</code>" in alice.last_page.text
    finally:
        alice.close()


async def test_bob_sees_only_his_roles_tool(signin: RunningJarvis) -> None:
    bob = Person("bob")
    try:
        async with signed_in_client(signin, bob) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == {"jarvis_check_status"}
            assert result_json(await client.call_tool("jarvis_check_status", {}))["healthy"] is True
            refused = await client.call_tool("jarvis_server", {"action": "list"})
            assert refused.is_error
        # The client asked for `jarvis`; the consent page shows what he is granted: his role's one tool inside it.
        assert bob.last_page is not None
        assert "<code>jarvis:jarvis_check_status</code>" in bob.last_page.text
        assert "<code>jarvis</code>" not in bob.last_page.text
    finally:
        bob.close()


def test_metadata_names_the_endpoints_and_s256_only(signin: RunningJarvis) -> None:
    meta = httpx2.get(signin.url("/.well-known/oauth-authorization-server")).json()
    assert meta["issuer"] == signin.base_url
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["authorization_response_iss_parameter_supported"] is True
    assert meta["registration_endpoint"] == signin.url("/oauth/register")
    assert meta["client_id_metadata_document_supported"] is True
    assert "People sign in at http://127.0.0.1:" in signin.log()  # jarvis up's banner says so


def test_a_person_signs_in_through_jarvis_and_gets_a_token_for_the_surface(signin: RunningJarvis) -> None:
    scope = "jarvis:jarvis_check_status jarvis:jarvis_server offline_access"
    _, tokens, bob = sign_in_via_jarvis(signin, "bob", scope)
    assert bob.last_page is not None
    assert "e2e MCP client" in bob.last_page.text
    assert tokens.status_code == 200, tokens.text
    # Bob's role (ops) grants jarvis_check_status only: jarvis_server, asked for too, is not in his token.
    assert tokens.json()["scope"] == "jarvis:jarvis_check_status"
    keys = KeySet.import_key_set(httpx2.get(signin.url("/oauth/jwks.json")).json())
    claims = jwt.decode(tokens.json()["access_token"], keys).claims
    assert claims["sub"] == "bob"
    assert claims["email"] == "bob@example.test"
    assert claims["aud"] == signin.url("/mcp/jarvis")
    assert claims["iss"] == signin.base_url


def test_a_disabled_user_gets_no_new_token(signin: RunningJarvis) -> None:
    client_id, tokens, _ = sign_in_via_jarvis(signin, "alice", "jarvis")
    assert tokens.status_code == 200, tokens.text
    users = {u["subject"]: u for u in json.loads(signin.cli("user", "list").stdout)}
    assert users["alice"]["groups"] == ["dev"]
    assert users["alice"]["email"] == "alice@example.test"
    signin.cli("user", "disable", "alice@example.test")
    try:
        form = {"grant_type": "refresh_token", "refresh_token": tokens.json()["refresh_token"], "client_id": client_id}
        refreshed = httpx2.post(signin.url("/oauth/token"), data=form)
        # `jarvis user disable` revokes the person's refresh tokens at once (item 3), so the refresh is refused as
        # revoked; a new sign-in is refused as disabled.
        assert refreshed.status_code == 400
        assert refreshed.json()["error"] == "invalid_grant"
        assert "revoked" in refreshed.json()["error_description"]
        _, refused, _ = sign_in_via_jarvis(signin, "alice", "jarvis")
        assert "error=access_denied" in refused.headers["location"]
        assert "disabled" in refused.headers["location"]
    finally:
        signin.cli("user", "enable", "alice")


def test_the_conformance_suites_authorization_server_scenarios_pass(signin: RunningJarvis, tmp_path: Path) -> None:
    """The official suite's `authorization` command: metadata, then an authorization code grant it waits for at its
    own callback listener, which alice completes through the provider and Jarvis's consent."""
    port = free_port()
    callback = f"http://127.0.0.1:{port}/callback"
    made = json.loads(signin.cli("oauth-client", "add", "conformance", "--redirect-uri", callback).stdout)
    suite = subprocess.Popen(
        [
            str(NODE),
            str(CONFORMANCE),
            "authorization",
            "--url",
            signin.base_url,
            "--client-id",
            made["client_id"],
            "--resource",
            signin.url("/mcp/jarvis"),
            "--port",
            str(port),
            "-o",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output: list[str] = []
    try:
        assert suite.stdout is not None
        for line in suite.stdout:
            output.append(line)
            if line.startswith(signin.url("/oauth/authorize")):
                alice = Person("alice")
                try:
                    redirect = alice.authorize(line.strip(), stop_at=callback)
                finally:
                    alice.close()
                httpx2.get(redirect.headers["location"])  # the suite's listener gets the authorization response
        suite.wait(60)
    finally:
        suite.kill()
    checks = [c for found in tmp_path.rglob("checks.json") for c in json.loads(found.read_text())]
    statuses = {c["id"]: c["status"] for c in checks}
    expected = ("authorization-server-metadata", "authorization-server-metadata-cimd", "authorization-code-grant")
    assert {name: statuses.get(name) for name in expected} == dict.fromkeys(expected, "SUCCESS"), "".join(output)[
        -3000:
    ]
    assert "FAILURE" not in statuses.values(), statuses


def test_claude_code_finds_the_sign_in_and_reports_needs_authentication(signin: RunningJarvis, tmp_path: Path) -> None:
    """The real `claude` CLI (tools/clients) in a fresh home: `claude mcp add --transport http` for two surfaces,
    then `claude mcp list` connects to each, follows the 401 to the metadata and reports it as needing
    authentication (the sign-in it would start), not as failed."""
    env = client_env(tmp_path)
    for name, path in (("jarvis", "/mcp/jarvis"), ("jarvis-discovery", "/mcp")):
        added = subprocess.run(
            ["claude", "mcp", "add", "--transport", "http", name, signin.url(path)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert added.returncode == 0, added.stdout + added.stderr
    output = mcp_list("claude", tmp_path, tmp_path)
    for name, path in (("jarvis", "/mcp/jarvis"), ("jarvis-discovery", "/mcp")):
        (line,) = [line for line in output.splitlines() if line.startswith(f"{name}: ")]
        assert signin.url(path) in line
        assert "Needs authentication" in line, output
        assert "Failed" not in line, output
