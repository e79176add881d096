"""The OAuth-protected `notes` server used with each person's own account (`servers.oauth`, issue 32), in a profile of
its own, for the e2e tests of per-person servers (issue 45): the fixtures and helpers they share.

A test module imports the fixtures it uses (`notes`, `notes_profile`, and `signin_notes_jarvis` as its `jarvis`, or a
`jarvis` fixture of its own with `NOTES_ENV`): `notes_profile` asks for whichever `jarvis` the module has."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlencode

import httpx2
import pytest

from tests.support.downstream import create_profile
from tests.support.oauth_downstream import ProtectedServer, protected_server
from tests.support.signin import CLIENT_REDIRECT, Person, pkce, signin_jarvis
from tests.support.stack import RunningJarvis, mcp_client, result_json

# A consent link, as a call of a per-person server's tool answers it to someone not connected.
LINK = re.compile(r"(http://\S+/oauth/downstream/start\?flow=[\w-]+)")
# Jarvis may reach the notes server's authorization server on localhost; revocations show within a second.
NOTES_ENV = {"JARVIS_DOWNSTREAM_OAUTH_ALLOW_HOSTS": '["localhost"]', "JARVIS_AGGREGATOR_TOKEN_CACHE_SECONDS": "1"}


@pytest.fixture(scope="module")
def notes() -> Iterator[ProtectedServer]:
    with protected_server() as server:
        yield server


@pytest.fixture(scope="module")
def signin_notes_jarvis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    """A Jarvis people sign in to (oidc-provider): group dev may use Jarvis, profiles and servers; ops profiles and
    servers."""
    with signin_jarvis(tmp_path_factory, env=NOTES_ENV) as running:
        developers = ("--scope", "jarvis", "--scope", "profile", "--scope", "servers")
        running.cli("role", "set", "developers", "--group", "dev", *developers)
        running.cli("role", "set", "ops-notes", "--group", "ops", "--scope", "profile", "--scope", "servers")
        yield running


@pytest.fixture(scope="module")
async def notes_profile(jarvis: RunningJarvis, notes: ProtectedServer) -> str:
    """Server `notes` installed, used with each person's own account, in profile `notes`: the profile's path."""
    admin = jarvis.create_token("admin", name="admin")
    async with mcp_client(jarvis.url(), admin) as client:
        config = {"action": "set", "key": "servers.oauth", "value": ["notes"]}
        result_json(await client.call_tool("jarvis_config", config))
        create = {"action": "create", "name": "notes", "type": "streamable-http", "url": notes.url}
        result_json(await client.call_tool("jarvis_server", create))
        await create_profile(client, "notes", "notes")
    return "/mcp/profile/notes"


def signed_in(jarvis: RunningJarvis, account: str, path: str, scope: str = "profile") -> str:
    """`account`'s access token for the surface at `path`, through Jarvis's sign-in and the identity provider."""
    registered = httpx2.post(
        jarvis.url("/oauth/register"),
        json={"redirect_uris": [CLIENT_REDIRECT], "client_name": "e2e", "token_endpoint_auth_method": "none"},
    )
    client_id = registered.json()["client_id"]
    verifier, challenge = pkce()
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": CLIENT_REDIRECT,
        "state": "s1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": jarvis.url(path),
        "scope": scope,
    }
    person = Person(account)
    try:
        redirect = person.authorize(f"{jarvis.url('/oauth/authorize')}?{urlencode(query)}")
    finally:
        person.close()
    form = {
        "grant_type": "authorization_code",
        "code": person.code_result(redirect).code,
        "code_verifier": verifier,
        "client_id": client_id,
        "redirect_uri": CLIENT_REDIRECT,
    }
    tokens = httpx2.post(jarvis.url("/oauth/token"), data=form)
    assert tokens.status_code == 200, tokens.text
    return str(tokens.json()["access_token"])
