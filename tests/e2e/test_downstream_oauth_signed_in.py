"""A person signed in through Jarvis (issue 31) uses an OAuth-protected downstream server with their own account
(issue 32): their calls carry `Principal.user`, so their grant is theirs as a person, not a token's; `jarvis user
disable` forgets it from the vault along with everything else they held."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import Iterator
from urllib.parse import urlencode

import httpx2
import pytest

from tests.support.downstream import create_profile
from tests.support.oauth_downstream import ProtectedServer, consent_in_browser, protected_server
from tests.support.signin import CLIENT_REDIRECT, Person, pkce, signin_jarvis
from tests.support.stack import RunningJarvis, mcp_client, result_json

pytestmark = pytest.mark.anyio

LINK = re.compile(r"(http://\S+/oauth/downstream/start\?flow=[\w-]+)")


@pytest.fixture(scope="module")
def notes() -> Iterator[ProtectedServer]:
    with protected_server() as server:
        yield server


@pytest.fixture(scope="module")
def jarvis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    env = {"JARVIS_DOWNSTREAM_OAUTH_ALLOW_HOSTS": '["localhost"]', "JARVIS_AGGREGATOR_TOKEN_CACHE_SECONDS": "1"}
    with signin_jarvis(tmp_path_factory, env=env) as running:
        running.cli("role", "set", "developers", "--group", "dev", "--scope", "jarvis", "--scope", "profile")
        yield running


def signed_in(jarvis: RunningJarvis, account: str, path: str) -> str:
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
        "scope": "profile",
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


def vault_people(jarvis: RunningJarvis) -> list[str]:
    with sqlite3.connect(jarvis.data_dir / "registry.db") as db:
        return [row[0] for row in db.execute("SELECT person FROM downstream_grants ORDER BY person")]


async def test_a_signed_in_person_connects_as_themselves_and_disabling_them_forgets_it(
    jarvis: RunningJarvis, notes: ProtectedServer
) -> None:
    admin = jarvis.create_token("admin", name="admin")
    async with mcp_client(jarvis.url(), admin) as client:
        config = {"action": "set", "key": "servers.oauth", "value": ["notes"]}
        result_json(await client.call_tool("jarvis_config", config))
        create = {"action": "create", "name": "notes", "type": "streamable-http", "url": notes.url}
        result_json(await client.call_tool("jarvis_server", create))
        await create_profile(client, "notes", "notes")

    alice = await asyncio.to_thread(signed_in, jarvis, "alice", "/mcp/profile/notes")
    async with mcp_client(jarvis.url("/mcp/profile/notes"), alice) as client:
        first = await client.call_tool("notes__whoami", {})
        text = str(getattr(first.content[0], "text", ""))
        link = LINK.search(text)
        assert first.is_error, text
        assert link is not None, text
        (await asyncio.to_thread(consent_in_browser, link.group(1), "alice-at-notes")).close()
        again = await client.call_tool("notes__whoami", {})
        assert getattr(again.content[0], "text", "") == "alice-at-notes"
    people = vault_people(jarvis)
    assert len(people) == 1
    assert people[0].startswith("user:")

    jarvis.cli("user", "disable", "alice")
    assert vault_people(jarvis) == []
