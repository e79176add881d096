"""The call doors' matrix (test_call_doors.py) for the servers each person uses as themselves, on a running `jarvis up
--require-auth`: a server whose key is each person's own (`servers.per_person`: one instance per person, their value
in its environment) and an OAuth-protected server each person authorizes with their own account (`servers.oauth`,
tests/support/oauth_downstream.py), with a second one nobody has connected to. They are in one profile, so a token of
one reaches the profile but not the other's tools.

Every door's token is a person of its own (a `jv_` token's person is the token): it sets its own value, or consents in
its own "browser", before its calls. Each door must give the same outcome and text, exactly one audit record and one
metrics increment per call; the answers are each caller's own (its value, its account at the server).
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Iterator

import pytest

from tests.support.call_doors import PROFILE_DOORS, Backend, catalogued, same_everywhere, through_every_door
from tests.support.downstream import FAST_ENV, create_profile, create_toy, eventually
from tests.support.oauth_downstream import ProtectedServer, consent_in_browser
from tests.support.per_person_oauth import LINK, NOTES_ENV, notes
from tests.support.stack import RunningJarvis, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio

__all__ = ["notes"]  # a fixture, registered by being here

ONCE = {"per_second": 0.001, "burst": 1}
PROFILE = "/mcp/profile/people"
CONNECT = "jarvis:jarvis_server:connect"  # a person sets their own value or starts their own consent with it
# The answer names the caller: its own value (keys) or its own account at the server (OAuth) is its token's name.
KEYED = Backend(
    "keyed__whoami",
    {},
    PROFILE,
    ("servers:keyed", CONNECT),
    ("servers:notes",),
    answer=lambda text: str(json.loads(text)["name"]),
)


def account(text: str) -> str:
    """The account the notes server answered as: its text, or `result` of its structured answer (`code_run`'s)."""
    return str(json.loads(text)["result"]) if text.startswith("{") else text


OAUTH = Backend("notes__whoami", {}, PROFILE, ("servers:notes", CONNECT), ("servers:keyed",), answer=account)

# Before anyone's connection listed a server's tools, a profile lists one `connect` tool answering the caller's link.
NOT_YET = Backend("fresh__connect", {}, PROFILE, ("servers:fresh",), ("servers:notes",))


@pytest.fixture(scope="module")
def jarvis(tmp_path_factory: pytest.TempPathFactory, notes: ProtectedServer) -> Iterator[RunningJarvis]:
    # A caller that consented after its first call calls once more (the test of consent): its third is limited.
    limits = {KEYED.name: ONCE, OAUTH.name: {"per_second": 0.001, "burst": 2}}
    env = {
        **FAST_ENV,
        **NOTES_ENV,
        "HOME": str(tmp_path_factory.mktemp("home")),
        "JARVIS_AGGREGATOR_RATE_LIMIT_TOOLS": json.dumps(limits),
    }
    running = start_jarvis(tmp_path_factory.mktemp("doors-per-person"), "--require-auth", env=env)
    try:
        asyncio.run(install(running, notes))
        yield running
    finally:
        running.stop()


async def install(jarvis: RunningJarvis, notes: ProtectedServer) -> None:
    """The servers in profile `people`; keyed's and notes' tools learned from one person's own connection (an
    admin's), as everyone is listed and discovery catalogues them before they connect themselves. `fresh` (the same
    notes server again) is one nobody has connected to: its tools are not known yet."""
    admin = jarvis.create_token("admin", name="admin")
    async with mcp_client(jarvis.url(), admin) as client:
        for key, value in (("servers.per_person", {"keyed": ["TOY_NAME"]}), ("servers.oauth", ["notes", "fresh"])):
            result_json(await client.call_tool("jarvis_config", {"action": "set", "key": key, "value": value}))
        await create_toy(client, "keyed")
        for name in ("notes", "fresh"):
            create = {"action": "create", "name": name, "type": "streamable-http", "url": notes.url}
            result_json(await client.call_tool("jarvis_server", create))
        await create_profile(client, "people", "keyed", "notes", "fresh")
    await set_value(jarvis, admin, "admin")
    await consent(jarvis, admin, "admin")
    async with mcp_client(jarvis.url(PROFILE), admin) as client:
        for backend in (KEYED, OAUTH):
            assert not (await client.call_tool(backend.name, {})).is_error
    for backend in (KEYED, OAUTH):
        await eventually(functools.partial(catalogued, jarvis, admin, backend.name), what=f"{backend.name} catalogued")


async def connect(jarvis: RunningJarvis, token: str, **arguments: object) -> dict[str, object]:
    async with mcp_client(jarvis.url("/mcp/jarvis"), token) as client:
        done = await client.call_tool("jarvis_server", {"action": "connect", **arguments})
    return dict(result_json(done))


async def set_value(jarvis: RunningJarvis, token: str, name: str) -> None:
    """The token's person sets their own TOY_NAME: their token's name."""
    done = await connect(jarvis, token, name="keyed", env={"TOY_NAME": name})
    assert done["state"] == "ready", done


async def consent(jarvis: RunningJarvis, token: str, name: str) -> None:
    """The token's person authorizes the notes server as account `<token name>-at-notes`, in their own browser."""
    done = await connect(jarvis, token, name="notes")
    link = LINK.search(str(done["link"]))
    assert link is not None, done
    (await asyncio.to_thread(consent_in_browser, link.group(1), f"{name}-at-notes")).close()


async def test_a_per_person_key_servers_tool_answers_alike_through_every_door(jarvis: RunningJarvis) -> None:
    allowed = same_everywhere(await through_every_door(jarvis, KEYED, KEYED.allowed, 1, PROFILE_DOORS, set_value))
    assert allowed.what == (False, "<caller>", ["ok"])  # each door's call ran on its person's own instance
    limited = same_everywhere(await through_every_door(jarvis, KEYED, KEYED.allowed, 2, PROFILE_DOORS, set_value))
    assert (limited.refused, limited.outcomes) == (True, ["ok", "rate_limited"])
    assert "rate limited: this token may call keyed__whoami" in limited.text


async def found(jarvis: RunningJarvis, token: str, name: str) -> dict[str, object]:
    """Tool `name` as tool_find finds it for the token's person."""
    async with mcp_client(jarvis.url("/mcp"), token) as client:
        query = {"query": name.replace("__", " "), "limit": 10}
        answer = result_json(await client.call_tool("tool_find", query))
    return next((r for r in answer["results"] if r["name"] == name), {})


async def test_a_person_without_their_value_is_told_how_to_set_it_by_every_door(jarvis: RunningJarvis) -> None:
    """Every door's call says which value to set; tool_find finds the tool, not callable for them until they have."""
    answers = await through_every_door(jarvis, KEYED, KEYED.allowed, 1, PROFILE_DOORS)
    refused, text, outcomes = same_everywhere(answers).what
    assert (refused, outcomes) == (True, ["needs_keys"])  # the person's to do: no error alert counts it
    assert "action=connect name=keyed" in text
    token = answers["profile"].token
    before = await found(jarvis, token, KEYED.name)
    assert before["callable"] is False, before
    assert "jarvis_server action=connect name=keyed env=" in str(before["install_hint"])
    await set_value(jarvis, token, "a-value-of-its-own")
    assert (await found(jarvis, token, KEYED.name))["callable"] is True


async def test_a_per_person_oauth_servers_tool_needs_each_callers_own_consent_through_every_door(
    jarvis: RunningJarvis,
) -> None:
    """Not connected, every door answers the caller's own link (one record, `needs_consent`); the link each door
    gave, opened and approved, connects that door's caller: its next call answers as its own account."""
    answers = await through_every_door(jarvis, OAUTH, OAUTH.allowed, 1, PROFILE_DOORS)
    refused, text, outcomes = same_everywhere(answers).what
    assert (refused, outcomes) == (True, ["needs_consent"])
    assert "<link>" in text
    links = {door: LINK.findall(seen.raw) for door, seen in answers.items()}
    assert len({link for found in links.values() for link in found}) == len(answers), links  # one each, all apart
    for door, seen in answers.items():
        own = f"{door}-own-account"
        (await asyncio.to_thread(consent_in_browser, links[door][0], own)).close()
        refused, text = await PROFILE_DOORS[door](jarvis, seen.token, OAUTH)
        assert (refused, OAUTH.answer(text)) == (False, own), door


async def test_a_server_nobody_has_connected_to_yet_gives_every_door_its_callers_link(jarvis: RunningJarvis) -> None:
    """Its tools are not known, so the profile lists `fresh__connect` for it, and discovery catalogues the same: each
    door's call of it asks its caller's own consent."""
    refused, text, outcomes = same_everywhere(
        await through_every_door(jarvis, NOT_YET, NOT_YET.allowed, 1, PROFILE_DOORS)
    ).what
    assert (refused, outcomes) == (True, ["needs_consent"])
    assert "server 'fresh' needs your authorization with your own account" in text
    assert "<link>" in text


async def test_a_per_person_oauth_servers_tool_answers_alike_through_every_door(jarvis: RunningJarvis) -> None:
    allowed = same_everywhere(await through_every_door(jarvis, OAUTH, OAUTH.allowed, 1, PROFILE_DOORS, consent))
    assert allowed.what == (False, "<caller>-at-notes", ["ok"])  # each as its own person
    limited = same_everywhere(await through_every_door(jarvis, OAUTH, OAUTH.allowed, 3, PROFILE_DOORS, consent))
    assert (limited.refused, limited.outcomes) == (True, ["ok", "ok", "rate_limited"])
    assert "rate limited: this token may call notes__whoami" in limited.text


@pytest.mark.parametrize("backend", [KEYED, OAUTH], ids=["keys", "oauth"])
async def test_wrong_scope_on_a_persons_own_server_is_refused_by_every_door(
    jarvis: RunningJarvis, backend: Backend
) -> None:
    """As for a shared server (test_call_doors.py), the scopes a refusal names differ by door; not that it is
    refused, how it is recorded, nor that it names the tool."""
    server = backend.name.partition("__")[0]
    for door, seen in (await through_every_door(jarvis, backend, backend.narrow, 1, PROFILE_DOORS)).items():
        assert (seen.refused, seen.outcomes) == (True, ["denied"]), door
        assert f"do not allow {backend.name} on " in seen.text, (door, seen.text)
        assert f"servers:{server}" in seen.text, (door, seen.text)
