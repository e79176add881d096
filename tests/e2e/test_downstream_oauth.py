"""Each person's own account at an OAuth-protected downstream server (issue 32), through a real `jarvis up`.

The server and its authorization server run on loopback (tests/support/oauth_downstream.py: the MCP SDK's own
authorization server and token verification). Two people, each with a `jv_` token of their own, call the same
profile: each is first answered with a consent link, opens it in their own "browser" (an HTTP client with a cookie
jar), signs in at the authorization server with a different account, and their next call runs as that account.
Access tokens live 3 s: a later call still succeeds, through a refresh nobody notices. A callback replayed, or
carrying another person's state, is refused; tokens never appear in the log.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.client.session import ElicitationFnT
from mcp.client.streamable_http import streamable_http_client

from tests.support.downstream import create_profile
from tests.support.oauth_downstream import ProtectedServer, consent_in_browser, open_consent_link, protected_server
from tests.support.stack import RunningJarvis, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio

LINK = re.compile(r"(http://\S+/oauth/downstream/start\?flow=[\w-]+)")


@pytest.fixture(scope="module")
def notes() -> Iterator[ProtectedServer]:
    with protected_server(token_seconds=3) as server:
        yield server


@pytest.fixture(scope="module")
def jarvis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    env = {
        "HOME": str(tmp_path_factory.mktemp("home")),
        # The authorization server is on loopback under another name than the server: an admin allows it.
        "JARVIS_DOWNSTREAM_OAUTH_ALLOW_HOSTS": '["localhost"]',
        "JARVIS_DOWNSTREAM_OAUTH_REFRESH_AHEAD_SECONDS": "1",
        "JARVIS_AGGREGATOR_DOWNSTREAM_WATCH_SECONDS": "0.5",
    }
    running = start_jarvis(tmp_path_factory.mktemp("oauth-downstream"), "--require-auth", env=env)
    yield running
    running.stop()
    print(running.log()[-6000:])


async def call(
    jarvis: RunningJarvis, token: str, tool: str = "notes__whoami", profile: str = "notes"
) -> tuple[bool, str]:
    async with mcp_client(jarvis.url(f"/mcp/profile/{profile}"), token) as client:
        result = await client.call_tool(tool, {})
    return bool(result.is_error), str(getattr(result.content[0], "text", ""))


async def test_two_people_authorize_with_their_own_accounts_and_refresh_unnoticed(
    jarvis: RunningJarvis, notes: ProtectedServer
) -> None:
    admin_token = jarvis.create_token("admin", name="admin")
    alice, bob = jarvis.create_token("admin", name="alice"), jarvis.create_token("admin", name="bob")
    async with mcp_client(jarvis.url(), admin_token) as admin:
        created = await admin.call_tool(
            "jarvis_server", {"action": "create", "name": "notes", "type": "streamable-http", "url": notes.url}
        )
        result_json(created)
        result_json(
            await admin.call_tool("jarvis_config", {"action": "set", "key": "servers.oauth", "value": ["notes"]})
        )
        await create_profile(admin, "notes", "notes")

    # Alice's first call: a tool error carrying her consent link (this client takes no URL elicitation).
    failed, text = await call(jarvis, alice)
    assert failed, text
    assert "your authorization" in text
    alice_link = LINK.search(text)
    assert alice_link is not None, text
    await asyncio.to_thread(consent_in_browser, alice_link.group(1), "alice")
    assert await call(jarvis, alice) == (False, "alice")

    # Bob: his own link, his own account; Alice stays herself.
    failed, text = await call(jarvis, bob)
    bob_link = LINK.search(text)
    assert failed, text
    assert bob_link is not None, text
    bob_browser = await asyncio.to_thread(consent_in_browser, bob_link.group(1), "bob")
    assert await call(jarvis, bob) == (False, "bob")
    assert await call(jarvis, alice) == (False, "alice")

    # The access tokens expire after 3 s: the next calls refresh first, unnoticed.
    refreshes = notes.accounts.grants.count("refresh_token")
    await asyncio.sleep(3.5)
    assert await call(jarvis, alice) == (False, "alice")
    assert await call(jarvis, bob) == (False, "bob")
    assert notes.accounts.grants.count("refresh_token") >= refreshes + 2

    # A replayed callback, and one with another person's state, are refused.
    failed, text = await call(jarvis, admin_token)  # the admin is a third person: a consent of their own
    admin_link = LINK.search(text)
    assert failed, text
    assert admin_link is not None, text

    def hijack() -> int:
        # Bob's browser completes the admin's consent: it never opened the admin's link, so it lacks its cookie.
        admin_browser = httpx2.Client(timeout=30)
        # A token's link opens from a page naming the token and the server, and only through that page's form:
        # neither the GET alone nor a form posted without the page's cookie (another site's, or another browser's)
        # opens it.
        page = admin_browser.get(admin_link.group(1))
        assert page.status_code == 200, page.text
        assert "Connect notes?" in page.text
        assert "the Jarvis token" in page.text
        flow = admin_link.group(1).rsplit("=", 1)[1]
        forged = bob_browser.post(jarvis.url("/oauth/downstream/start"), data={"flow": flow, "csrf": "guess"})
        assert forged.status_code == 400, forged.text
        start = open_consent_link(admin_browser, admin_link.group(1))
        assert start.status_code == 302, start.text
        authorize = admin_browser.get(start.headers["location"])
        login = admin_browser.get(authorize.headers["location"] + "&account=mallory")
        stolen = bob_browser.get(login.headers["location"])
        assert "another browser" in stolen.text
        finished = admin_browser.get(login.headers["location"])
        assert "Connected" in finished.text
        return admin_browser.get(login.headers["location"]).status_code  # replayed

    assert await asyncio.to_thread(hijack) == 400
    log = jarvis.log()
    for token in [*notes.accounts.access, *notes.accounts.refresh]:
        assert token not in log


async def test_connect_info_disconnect_and_a_denied_consent(jarvis: RunningJarvis, notes: ProtectedServer) -> None:
    """A person connects before any call, sees the state in `info`, disconnects; a consent denied connects nothing."""
    carol, dave = jarvis.create_token("admin", name="carol"), jarvis.create_token("admin", name="dave")
    await _notes_installed(jarvis, notes)
    async with mcp_client(jarvis.url(), carol) as client:
        info = result_json(await client.call_tool("jarvis_server", {"action": "info", "name": "notes"}))
        assert info["your_connection"]["state"] == "needs consent"
        connect = result_json(await client.call_tool("jarvis_server", {"action": "connect", "name": "notes"}))
        assert connect["link"].startswith(jarvis.base_url + "/oauth/downstream/start?flow=")
        await asyncio.to_thread(consent_in_browser, connect["link"], "carol")
        info = result_json(await client.call_tool("jarvis_server", {"action": "info", "name": "notes"}))
        assert info["your_connection"]["state"] == "connected"
        assert "at-" not in json.dumps(info)
        again = result_json(await client.call_tool("jarvis_server", {"action": "connect", "name": "notes"}))
        assert again["state"] == "connected"
        assert "link" not in again
    assert await call(jarvis, carol) == (False, "carol")
    async with mcp_client(jarvis.url(), carol) as client:
        gone = result_json(await client.call_tool("jarvis_server", {"action": "disconnect", "name": "notes"}))
        assert gone == {"server": "notes", "forgotten": True}
        info = result_json(await client.call_tool("jarvis_server", {"action": "info", "name": "notes"}))
        assert info["your_connection"]["state"] == "needs consent"
    failed, text = await call(jarvis, carol)
    assert failed, text
    assert LINK.search(text) is not None, text

    # Dave says no at the authorization server: the page says so, and his next call asks again.
    failed, text = await call(jarvis, dave)
    dave_link = LINK.search(text)
    assert dave_link is not None, text

    def deny() -> str:
        browser = httpx2.Client(timeout=30)
        start = open_consent_link(browser, dave_link.group(1))
        authorize = browser.get(start.headers["location"])
        refused = browser.get(authorize.headers["location"] + "&deny=1")
        return browser.get(refused.headers["location"]).text

    assert "consent was not given (access_denied" in await asyncio.to_thread(deny)
    failed, text = await call(jarvis, dave)
    assert failed, text
    assert LINK.search(text) is not None, text
    assert "ERROR mcp.client.auth" not in jarvis.log()  # a denial is a person's answer, not an error to page about


async def test_metadata_on_an_internal_address_is_refused(jarvis: RunningJarvis) -> None:
    """The server is on `localhost` (allowed); its authorization server on 127.0.0.1, which no admin allowed."""
    with protected_server(server_host="localhost", issuer_host="127.0.0.1") as elsewhere:
        await _notes_installed(jarvis, elsewhere, name="elsewhere")
        failed, text = await call(jarvis, jarvis.create_token("admin", name="erin"), "elsewhere__whoami", "elsewhere")
    assert failed, text
    assert "127.0.0.1, an internal address" in text
    assert elsewhere.accounts.clients == {}  # nothing was registered there


async def _notes_installed(jarvis: RunningJarvis, server: ProtectedServer, name: str = "notes") -> None:
    admin_token = jarvis.create_token("admin", name="admin")
    async with mcp_client(jarvis.url(), admin_token) as admin:
        listed = result_json(await admin.call_tool("jarvis_server", {"action": "list"}))
        if name in {s["name"] for s in listed["servers"]}:
            return
        result_json(
            await admin.call_tool(
                "jarvis_server", {"action": "create", "name": name, "type": "streamable-http", "url": server.url}
            )
        )
        config = result_json(await admin.call_tool("jarvis_config", {"action": "get", "key": "servers.oauth"}))
        value = sorted({*config["value"], name})
        result_json(await admin.call_tool("jarvis_config", {"action": "set", "key": "servers.oauth", "value": value}))
        await create_profile(admin, name, name)


async def call_asking(
    jarvis: RunningJarvis, token: str, mode: str, elicitation_callback: ElicitationFnT
) -> types.CallToolResult:
    """`notes__whoami` from a client in `mode` that takes URL-mode elicitations through `elicitation_callback`."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(
            streamable_http_client(jarvis.url("/mcp/profile/notes"), http_client=http),
            mode=mode,
            elicitation_callback=elicitation_callback,
        ) as client,
    ):
        return await client.call_tool("notes__whoami", {})


@pytest.mark.parametrize(("mode", "person"), [("legacy", "frank"), ("2026-07-28", "gina")])
async def test_a_client_that_takes_url_elicitations_is_asked_and_its_call_finishes(
    jarvis: RunningJarvis, notes: ProtectedServer, mode: str, person: str
) -> None:
    """The link comes as a URL-mode elicitation: on the call's stream to a 2025-era client, as an input request to a
    2026-07-28 one (whose retry carries the answer). Once the person approved in the browser, the call answers."""
    token = jarvis.create_token("admin", name=person)
    await _notes_installed(jarvis, notes)
    asked: list[str] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams), params
        asked.append(params.url)
        await asyncio.to_thread(consent_in_browser, params.url, person)
        return types.ElicitResult(action="accept")

    result = await call_asking(jarvis, token, mode, elicit)
    assert not result.is_error, result.content
    assert getattr(result.content[0], "text", "") == person
    assert len(asked) == 1
    assert LINK.match(asked[0])


async def test_a_2026_client_that_declines_gets_the_link_in_a_tool_error(
    jarvis: RunningJarvis, notes: ProtectedServer
) -> None:
    hana = jarvis.create_token("admin", name="hana")
    await _notes_installed(jarvis, notes)
    asked: list[str] = []

    async def decline(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(getattr(params, "url", ""))
        return types.ElicitResult(action="decline")

    declined = await call_asking(jarvis, hana, "2026-07-28", decline)
    assert len(asked) == 1
    assert declined.is_error
    text = str(getattr(declined.content[0], "text", ""))
    assert "needs your authorization" in text
    assert LINK.search(text), text
    # Without a way to take a URL-mode elicitation, a 2026 caller is not asked at all: the link is in the error.
    async with mcp_client(jarvis.url("/mcp/profile/notes"), hana, mode="2026-07-28") as plain:
        unasked = await plain.call_tool("notes__whoami", {})
    assert unasked.is_error
    assert LINK.search(str(getattr(unasked.content[0], "text", "")))


def test_the_client_metadata_document_names_only_the_configured_url(jarvis: RunningJarvis) -> None:
    """Issue 44, finding 13: the document Jarvis names itself by at servers is built from its public URL alone; a
    request's Host (any name that resolves to Jarvis) changes nothing in it."""
    for host in (None, "evil.example", f"evil.example:{jarvis.port}"):
        headers = {"host": host} if host else {}
        response = httpx2.get(jarvis.url("/oauth/downstream/client.json"), headers=headers)
        if response.status_code != 200:  # the gate may refuse a Host it does not serve: then nothing is reflected
            assert "evil.example" not in response.text
            continue
        document = response.json()
        assert document["client_id"] == jarvis.base_url + "/oauth/downstream/client.json"
        assert document["redirect_uris"] == [jarvis.base_url + "/oauth/downstream/callback"]
