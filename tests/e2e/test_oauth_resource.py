"""Jarvis as an OAuth protected resource (issue 31 item 1), over real HTTP against a real `jarvis up`: each surface's
resource metadata, the challenge on 401 and 403, and JWT access tokens (minted with the aggregator's own key
directory) accepted for their surface only, beside `jv_` tokens.

The provider is never contacted here (the resource side checks tokens locally), so JARVIS_OIDC_ISSUER names a closed
loopback port."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from jarvis.aggregator.oauth import access_tokens
from jarvis.aggregator.oauth.keys import SigningKeys
from tests.support.stack import RunningJarvis, free_port, mcp_client, start_jarvis

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "prm-test", "version": "1"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
pytestmark = pytest.mark.anyio
SURFACES = ["/mcp", "/mcp/jarvis", "/mcp/orchestrator", "/mcp/debug"]


@pytest.fixture(scope="module")
def signin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningJarvis, Path]]:
    keys = tmp_path_factory.mktemp("keys") / "oauth-keys"
    running = start_jarvis(
        tmp_path_factory.mktemp("resource"),
        "--require-auth",
        env={
            "HOME": str(tmp_path_factory.mktemp("home")),
            "JARVIS_OIDC_ISSUER": f"http://127.0.0.1:{free_port()}",
            "JARVIS_OIDC_CLIENT_ID": "jarvis",
            "JARVIS_OIDC_CLIENT_SECRET": "unused",
            "JARVIS_OAUTH_KEYS_DIR": str(keys),
        },
    )
    yield running, keys
    running.stop()


def post(running: RunningJarvis, path: str, token: str | None = None) -> httpx2.Response:
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx2.post(running.url(path), content=json.dumps(INITIALIZE), headers={**HEADERS, **auth}, timeout=10)


def jwt_for(running: RunningJarvis, keys: Path, path: str, *scopes: str, issuer: str = "") -> str:
    return access_tokens.issue(
        SigningKeys.load(keys),
        issuer=issuer or running.base_url,
        subject="alice-sub",
        audience=running.base_url + path,
        scopes=scopes,
        client_id="test-client",
        ttl_seconds=300,
        email="alice@example.test",
    )


@pytest.mark.parametrize("path", [*SURFACES, "/mcp/profile/dev"])
def test_each_surface_publishes_resource_metadata(signin: tuple[RunningJarvis, Path], path: str) -> None:
    running, _ = signin
    answer = httpx2.get(running.url(f"/.well-known/oauth-protected-resource{path}"), timeout=10)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["resource"] == running.base_url + path
    assert body["authorization_servers"] == [running.base_url]
    assert body["bearer_methods_supported"] == ["header"]
    assert "admin" in body["scopes_supported"]
    if path == "/mcp/jarvis":
        assert body["scopes_supported"][0] == "jarvis"


def test_root_metadata_is_for_mcp(signin: tuple[RunningJarvis, Path]) -> None:
    running, _ = signin
    body = httpx2.get(running.url("/.well-known/oauth-protected-resource"), timeout=10).json()
    assert body["resource"] == running.base_url + "/mcp"
    assert httpx2.get(running.url("/.well-known/oauth-protected-resource/nope"), timeout=10).status_code == 404


def test_401_names_the_metadata_and_scope(signin: tuple[RunningJarvis, Path]) -> None:
    running, _ = signin
    answer = post(running, "/mcp/jarvis")
    assert answer.status_code == 401
    challenge = answer.headers["www-authenticate"]
    assert f'resource_metadata="{running.base_url}/.well-known/oauth-protected-resource/mcp/jarvis"' in challenge
    assert 'scope="jarvis"' in challenge
    # Discovery reaches what the token's other scopes allow: a client is told to ask for all the person may do.
    open_challenge = post(running, "/mcp").headers["www-authenticate"]
    assert 'scope="read admin"' in open_challenge
    assert f'resource_metadata="{running.base_url}/.well-known/oauth-protected-resource/mcp"' in open_challenge


def test_403_insufficient_scope_names_what_is_needed(signin: tuple[RunningJarvis, Path]) -> None:
    running, keys = signin
    answer = post(running, "/mcp/jarvis", jwt_for(running, keys, "/mcp/jarvis", "orchestrator"))
    assert answer.status_code == 403
    challenge = answer.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="jarvis"' in challenge
    assert "resource_metadata=" in challenge


def test_jwt_works_for_its_surface_only(signin: tuple[RunningJarvis, Path]) -> None:
    running, keys = signin
    token = jwt_for(running, keys, "/mcp/jarvis", "jarvis", "orchestrator")
    assert post(running, "/mcp/jarvis", token).status_code == 200
    other = post(running, "/mcp/orchestrator", token)
    assert other.status_code == 401
    assert 'error="invalid_token"' in other.headers["www-authenticate"]
    assert "another resource" in other.headers["www-authenticate"]


def test_jwt_refusals_say_why(signin: tuple[RunningJarvis, Path], tmp_path: Path) -> None:
    running, keys = signin
    foreign = jwt_for(running, keys, "/mcp/jarvis", "jarvis", issuer="https://elsewhere.example")
    assert "another issuer" in post(running, "/mcp/jarvis", foreign).headers["www-authenticate"]
    tampered = jwt_for(running, keys, "/mcp/jarvis", "jarvis")[:-4] + "AAAA"
    assert post(running, "/mcp/jarvis", tampered).status_code == 401
    stranger = access_tokens.issue(
        SigningKeys.load(tmp_path / "other-keys"),
        issuer=running.base_url,
        subject="mallory",
        audience=running.base_url + "/mcp/jarvis",
        scopes=["admin"],
        client_id="x",
        ttl_seconds=300,
    )
    assert post(running, "/mcp/jarvis", stranger).status_code == 401


def test_jv_token_still_works(signin: tuple[RunningJarvis, Path]) -> None:
    running, _ = signin
    assert post(running, "/mcp/jarvis", running.create_token("jarvis")).status_code == 200


def test_an_open_loopback_jarvis_is_as_before(jarvis: RunningJarvis) -> None:
    assert httpx2.get(jarvis.url("/.well-known/oauth-protected-resource/mcp/jarvis"), timeout=10).status_code == 404
    assert httpx2.get(jarvis.url("/.well-known/oauth-protected-resource"), timeout=10).status_code == 404
    assert post(jarvis, "/mcp/jarvis").status_code == 200


def test_tokens_required_without_sign_in_publish_metadata_without_a_server(secured: RunningJarvis) -> None:
    body = httpx2.get(secured.url("/.well-known/oauth-protected-resource/mcp/orchestrator"), timeout=10).json()
    assert body["resource"] == secured.base_url + "/mcp/orchestrator"
    assert "authorization_servers" not in body
    challenge = post(secured, "/mcp/orchestrator").headers["www-authenticate"]
    assert 'scope="orchestrator"' in challenge
    assert "/.well-known/oauth-protected-resource/mcp/orchestrator" in challenge
    jwt_like = post(secured, "/mcp/orchestrator", "eyJhbGciOiJSUzI1NiJ9.e30.c2ln")
    assert jwt_like.status_code == 401  # no sign-in: it goes to the registry as any non-jv_ secret did


async def test_a_signed_in_persons_calls_are_audited_as_them(signin: tuple[RunningJarvis, Path]) -> None:
    running, keys = signin
    token = jwt_for(running, keys, "/mcp/jarvis", "jarvis")
    async with mcp_client(running.url("/mcp/jarvis"), token) as client:
        assert not (await client.call_tool("jarvis_check_status", {})).is_error
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        entries = [json.loads(line) for line in running.cli("audit", "export").stdout.splitlines()]
        mine = [e for e in entries if e["tool"] == "jarvis_check_status"]
        if mine:
            break
        await asyncio.sleep(0.5)
    assert mine, "the call was not audited"
    assert mine[0]["token_name"] == "alice@example.test via token test-client"  # who, and through what (0057)
    assert mine[0]["token_id"] == "user:alice-sub"
    assert token not in running.cli("audit", "export").stdout
