"""Group roles match with the providers teams run (issue 48 item 1): a real `jarvis up --require-auth` federated to
npm oidc-provider at its defaults (`conformIdTokenClaims: true`, a certified OpenID provider), which sends email,
name and groups only in the userinfo answer; and a second configuration putting groups under a nested claim
(`realm_access.roles`, as Keycloak does) with JARVIS_OIDC_GROUPS_CLAIM naming it.

bob is in group ops, whose role (`jarvis role set operators --group ops --scope jarvis:jarvis_check_status`) grants
one tool: through the MCP SDK's OAuth client he gets it, and `jarvis user list` shows his groups. Without the
userinfo call his groups are empty and the role never matches."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.support.signin import Person, signed_in_client, signin_jarvis
from tests.support.stack import RunningJarvis, result_json

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module", params=["groups", "realm_access.roles"])
def signin(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    claim = str(request.param)
    env = {} if claim == "groups" else {"JARVIS_OIDC_GROUPS_CLAIM": claim}  # the default needs no setting
    with signin_jarvis(tmp_path_factory, env=env, groups_claim=claim) as running:
        yield running


async def test_a_role_by_group_grants_bob_its_scopes(signin: RunningJarvis) -> None:
    bob = Person("bob")
    try:
        async with signed_in_client(signin, bob) as client:
            assert {t.name for t in (await client.list_tools()).tools} == {"jarvis_check_status"}
            assert result_json(await client.call_tool("jarvis_check_status", {}))["healthy"] is True
    finally:
        bob.close()
    users = {u["subject"]: u for u in json.loads(signin.cli("user", "list").stdout)}
    assert users["bob"]["groups"] == ["ops"]
    assert (users["bob"]["email"], users["bob"]["name"]) == ("bob@example.test", "Bob Example")
    assert "sent none under the claim" not in signin.log()
