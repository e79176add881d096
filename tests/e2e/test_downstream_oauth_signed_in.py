"""A person signed in through Jarvis (issue 31) uses an OAuth-protected downstream server with their own account
(issue 32): their calls carry `Principal.user`, so their grant is theirs as a person, not a token's; `jarvis user
disable` forgets it from the vault along with everything else they held. A consent link opens only in the browser
of the person it was made for (issue 44, decision 0062): one forwarded to another person connects nothing."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from typing import Any

import httpx2
import pytest

from tests.support.downstream import eventually
from tests.support.oauth_downstream import consent_in_browser, open_consent_link
from tests.support.oidc_provider import login
from tests.support.per_person_oauth import LINK, notes, notes_profile, signed_in
from tests.support.per_person_oauth import signin_notes_jarvis as jarvis
from tests.support.stack import RunningJarvis, mcp_client, result_json

pytestmark = pytest.mark.anyio

__all__ = ["jarvis", "notes", "notes_profile"]  # fixtures, registered by being here (jarvis: people sign in to it)


def vault_people(jarvis: RunningJarvis) -> list[str]:
    with sqlite3.connect(jarvis.data_dir / "registry.db") as db:
        return [row[0] for row in db.execute("SELECT person FROM downstream_grants ORDER BY person")]


async def whoami(jarvis: RunningJarvis, profile: str, token: str) -> tuple[bool, str]:
    async with mcp_client(jarvis.url(profile), token) as client:
        result = await client.call_tool("notes__whoami", {})
    return bool(result.is_error), str(getattr(result.content[0], "text", ""))


async def listed(jarvis: RunningJarvis, path: str, token: str, holding: str = "") -> set[str]:
    """The tool names `token` is listed at `path`; with `holding`, empty unless that name is among them."""
    async with mcp_client(jarvis.url(path), token) as client:
        names = {t.name for t in (await client.list_tools()).tools}
    return names if not holding or holding in names else set()


async def found(jarvis: RunningJarvis, token: str) -> dict[str, Any]:
    """notes__whoami as tool_find finds it for the token's person."""
    async with mcp_client(jarvis.url("/mcp"), token) as client:
        answer = result_json(await client.call_tool("tool_find", {"query": "whoami notes", "limit": 10}))
    return next((r for r in answer["results"] if r["name"] == "notes__whoami"), {})


async def test_a_persons_own_server_is_listed_found_and_called_through_every_door(
    jarvis: RunningJarvis, notes_profile: str
) -> None:
    """Issue 45: before anyone connects, the profile lists one `notes__connect` tool that answers the caller's link.
    Once alice connects, her listing holds the server's tools as her connection lists them, and she calls them from
    the profile, through tool_call and through code_run, each answering as her; bob, not connected, is listed the
    same tools, and a call gives him his own link; tool_find finds them for both, callable for alice only."""
    alice, bob = [await asyncio.to_thread(signed_in, jarvis, who, notes_profile) for who in ("alice", "bob")]
    alice_mcp, bob_mcp = [
        await asyncio.to_thread(signed_in, jarvis, who, "/mcp", "servers") for who in ("alice", "bob")
    ]
    assert await listed(jarvis, notes_profile, alice) == {"notes__connect"}
    async with mcp_client(jarvis.url(notes_profile), alice) as client:
        first = await client.call_tool("notes__connect", {})
    link = LINK.search(str(getattr(first.content[0], "text", "")))
    assert first.is_error
    assert link is not None, first
    (await asyncio.to_thread(consent_in_browser, link.group(1), "alice-at-notes", signed_in_as="alice")).close()

    await eventually(lambda: listed(jarvis, notes_profile, alice, "notes__whoami"), what="alice's tools listed")
    assert await whoami(jarvis, notes_profile, alice) == (False, "alice-at-notes")
    async with mcp_client(jarvis.url("/mcp"), alice_mcp) as client:
        called = await client.call_tool("tool_call", {"name": "notes__whoami", "arguments": {}})
        assert not called.is_error, called
        assert "alice-at-notes" in str(called.content[0])
        program = "return await tools.notes__whoami({});"
        ran = result_json(await client.call_tool("code_run", {"code": program}))
        assert "alice-at-notes" in json.dumps(ran["result"])

    # Bob is listed what alice's connection learned (pinned for everyone), and his call asks for his own consent.
    names = await eventually(lambda: listed(jarvis, notes_profile, bob, "notes__whoami"), what="bob's listing")
    assert "notes__connect" not in names
    failed, text = await whoami(jarvis, notes_profile, bob)
    assert failed, text
    assert LINK.search(text) is not None, text
    assert link.group(1) not in text  # his own consent, not alice's
    async with mcp_client(jarvis.url("/mcp"), bob_mcp) as client:
        refused = await client.call_tool("tool_call", {"name": "notes__whoami", "arguments": {}})
    assert refused.is_error
    assert "/oauth/downstream/start?flow=" in str(refused.content[0])

    hers = await eventually(lambda: found(jarvis, alice_mcp), what="tool_find finding notes__whoami")
    assert hers["callable"] is True
    his = await found(jarvis, bob_mcp)
    assert his["callable"] is False
    assert "jarvis_server action=connect name=notes" in his["install_hint"]

    # Alice disconnects (the tests below start from nobody connected).
    jarvis_token = await asyncio.to_thread(signed_in, jarvis, "alice", "/mcp/jarvis", "jarvis")
    async with mcp_client(jarvis.url("/mcp/jarvis"), jarvis_token) as client:
        info = result_json(await client.call_tool("jarvis_server", {"action": "info", "name": "notes"}))
        assert info["status"] == "per person"
        assert info["your_connection"]["state"] == "connected"
        result_json(await client.call_tool("jarvis_server", {"action": "disconnect", "name": "notes"}))


async def test_a_consent_link_forwarded_to_another_person_connects_nothing(
    jarvis: RunningJarvis, notes_profile: str
) -> None:
    """Mallory (bob) sends alice the link of her own consent: alice opens it, signs in as herself and approves with
    her account at the notes server. Mallory must not end up acting as alice there."""
    mallory = await asyncio.to_thread(signed_in, jarvis, "bob", notes_profile)
    failed, text = await whoami(jarvis, notes_profile, mallory)
    link = LINK.search(text)
    assert failed, text
    assert link is not None, text

    def alice_opens_it() -> httpx2.Response:
        with httpx2.Client(timeout=30) as alice_browser:
            return open_consent_link(alice_browser, link.group(1), signed_in_as="alice")

    refused = await asyncio.to_thread(alice_opens_it)
    assert refused.status_code == 403, refused.text
    assert "another person of Jarvis" in refused.text
    assert "Nothing was connected" in refused.text

    def mallory_hands_over_her_sign_in() -> httpx2.Response:
        """Mallory signs in to Jarvis's check herself and gives alice the provider's answer (login CSRF): alice's
        browser lacks the cookie of that sign-in, so it proves nothing."""
        with httpx2.Client(timeout=30) as mallory_browser, httpx2.Client(timeout=30) as alice_browser:
            to_provider = mallory_browser.get(link.group(1))
            assert to_provider.status_code == 303, to_provider.text
            answer = mallory_browser.get(to_provider.headers["location"])
            while not (answer.is_redirect and "/oauth/callback" in answer.headers["location"]):
                answer = (
                    login(mallory_browser, answer, "bob")
                    if 'name="login"' in answer.text
                    else mallory_browser.get(answer.url.join(answer.headers["location"]))
                )
            return alice_browser.get(answer.url.join(answer.headers["location"]))

    handed = await asyncio.to_thread(mallory_hands_over_her_sign_in)
    assert handed.status_code == 400, handed.text
    assert "started in another browser" in handed.text
    failed, again = await whoami(jarvis, notes_profile, mallory)
    assert failed, again
    assert "your authorization" in again  # mallory is still not connected, as alice or anyone

    # Her own browser, signed in as herself: the same link opens, and she connects with her own account.
    (await asyncio.to_thread(consent_in_browser, link.group(1), "mallory-at-notes", signed_in_as="bob")).close()
    assert await whoami(jarvis, notes_profile, mallory) == (False, "mallory-at-notes")


async def test_a_signed_in_person_connects_as_themselves_and_disabling_them_forgets_it(
    jarvis: RunningJarvis, notes_profile: str
) -> None:
    before = set(vault_people(jarvis))  # others' grants (mallory's, from the test above) are left alone
    alice = await asyncio.to_thread(signed_in, jarvis, "alice", notes_profile)
    async with mcp_client(jarvis.url(notes_profile), alice) as client:
        first = await client.call_tool("notes__whoami", {})
        text = str(getattr(first.content[0], "text", ""))
        link = LINK.search(text)
        assert first.is_error, text
        assert link is not None, text
        browser = await asyncio.to_thread(consent_in_browser, link.group(1), "alice-at-notes", signed_in_as="alice")
        browser.close()
        again = await client.call_tool("notes__whoami", {})
        assert getattr(again.content[0], "text", "") == "alice-at-notes"
    people = set(vault_people(jarvis)) - before
    assert len(people) == 1
    assert next(iter(people)).startswith("user:")

    jarvis.cli("user", "disable", "alice")
    assert set(vault_people(jarvis)) == before
