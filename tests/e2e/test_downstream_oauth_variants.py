"""Jarvis's OAuth client against authorization servers that each offer one variant of the MCP authorization spec
(issue 32, point 1), and the faults a person's consent can meet, through a real `jarvis up` on loopback.

Each variant is a protected server of its own (tests/support/oauth_downstream.py) installed in the one Jarvis: a
person calls, opens the consent link in their "browser", signs in, and the next call runs as them; what the
authorization server saw (metadata requests, scopes, the client and how it authenticated) is then checked.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyUrl

from tests.support.downstream import create_profile
from tests.support.oauth_downstream import (
    EXTRA,
    OFFLINE,
    SCOPE,
    Accounts,
    ProtectedServer,
    Variant,
    moving_server,
    open_consent_link,
    protected_server,
)
from tests.support.stack import RunningJarvis, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio

LINK = re.compile(r"(http://\S+/oauth/downstream/start\?flow=[\w-]+)")
CIMD_URL = "https://jarvis.example/oauth/downstream/client.json"
PRM = "/.well-known/oauth-protected-resource"


@pytest.fixture(scope="module")
def jarvis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    env = {
        "HOME": str(tmp_path_factory.mktemp("home")),
        "JARVIS_DOWNSTREAM_OAUTH_ALLOW_HOSTS": '["localhost"]',
        "JARVIS_DOWNSTREAM_OAUTH_CLIENT_METADATA_URL": CIMD_URL,
        "JARVIS_TEST_PRE_SECRET": "pre-secret",
        "JARVIS_DOWNSTREAM_OAUTH_READY_SECONDS": "3",
        "JARVIS_AGGREGATOR_DOWNSTREAM_WATCH_SECONDS": "0.5",
    }
    running = start_jarvis(tmp_path_factory.mktemp("oauth-variants"), "--require-auth", env=env)
    yield running
    running.stop()
    print(running.log()[-6000:])


async def install(
    jarvis: RunningJarvis, name: str, server: ProtectedServer | str, client: dict[str, str] | None = None
) -> str:
    """`name` installed, in servers.oauth and in a profile of its own; a person's token (the admin's own)."""
    token = jarvis.create_token("admin", name=name)
    async with mcp_client(jarvis.url(), token) as admin:
        for key, value in (("servers.oauth", [name]), ("servers.oauth_clients", {name: client} if client else None)):
            if value is None:
                continue
            current = result_json(await admin.call_tool("jarvis_config", {"action": "get", "key": key}))["value"]
            merged = sorted({*current, *value}) if isinstance(value, list) else {**current, **value}
            result_json(await admin.call_tool("jarvis_config", {"action": "set", "key": key, "value": merged}))
        url = server if isinstance(server, str) else server.url
        create = {"action": "create", "name": name, "type": "streamable-http", "url": url}
        result_json(await admin.call_tool("jarvis_server", create))  # after servers.oauth: never shared
        await create_profile(admin, name, name)
    return token


async def call(jarvis: RunningJarvis, token: str, name: str, tool: str = "whoami") -> tuple[bool, str]:
    async with mcp_client(jarvis.url(f"/mcp/profile/{name}"), token) as client:
        result = await client.call_tool(f"{name}__{tool}", {})
    return bool(result.is_error), str(getattr(result.content[0], "text", ""))


def browse(link: str, account: str) -> str:
    """The person opens the link, signs in as `account`; the page Jarvis answers at the end."""
    browser = httpx2.Client(timeout=30)
    start = open_consent_link(browser, link)
    assert start.status_code == 302, start.text
    authorize = browser.get(start.headers["location"])
    assert authorize.status_code == 302, authorize.text
    assert "/login?" in authorize.headers["location"], authorize.headers["location"]
    login = browser.get(authorize.headers["location"] + f"&account={account}")
    return browser.get(login.headers["location"]).text


async def consent(jarvis: RunningJarvis, token: str, name: str, account: str, tool: str = "whoami") -> str:
    failed, text = await call(jarvis, token, name, tool)
    assert failed, text
    link = LINK.search(text)
    assert link is not None, text
    return await asyncio.to_thread(browse, link.group(1), account)


def registered(accounts: Accounts) -> OAuthClientInformationFull:
    assert len(accounts.clients) == 1, accounts.clients
    return next(iter(accounts.clients.values()))


CONNECTS: list[tuple[str, Variant, Callable[[Accounts], None]]] = [
    ("path-metadata", Variant(prm="path"), lambda a: _equal(a.prm_requests[:1], [f"{PRM}/mcp"])),
    ("root-metadata", Variant(prm="root"), lambda a: _equal(a.prm_requests[:2], [f"{PRM}/mcp", PRM])),
    ("scope-from-header", Variant(header_scope=True, prm_scopes=(SCOPE, EXTRA)), lambda a: _scopes(a, [SCOPE])),
    ("scope-from-prm", Variant(header_scope=False, prm_scopes=(SCOPE, EXTRA)), lambda a: _scopes(a, [SCOPE, EXTRA])),
    ("auth-none", Variant(auth_methods=("none",)), lambda a: _method(a, "none")),
    ("auth-basic", Variant(auth_methods=("client_secret_basic",)), lambda a: _method(a, "client_secret_basic")),
    ("auth-post", Variant(auth_methods=("client_secret_post",)), lambda a: _method(a, "client_secret_post")),
    ("auth-unlisted", Variant(auth_methods=None), lambda a: _method(a, "client_secret_basic")),
    ("offline-access", Variant(offline_access=True), lambda a: _scopes(a, [SCOPE, OFFLINE])),
    ("no-offline-access", Variant(offline_access=False), lambda a: _scopes(a, [SCOPE])),
    ("cimd", Variant(cimd=True, registration=False), lambda a: _equal(list(a.clients), [CIMD_URL])),
    ("openid-discovery", Variant(metadata="openid"), lambda a: _equal(len(a.clients), 1)),
]


def _equal(seen: object, wanted: object) -> None:
    assert seen == wanted


def _scopes(accounts: Accounts, wanted: list[str]) -> None:
    assert accounts.requested_scopes[-1] == wanted


def _method(accounts: Accounts, wanted: str) -> None:
    assert registered(accounts).token_endpoint_auth_method == wanted
    if wanted != "none":
        assert registered(accounts).client_secret


@pytest.mark.parametrize(("name", "variant", "check"), CONNECTS, ids=[c[0] for c in CONNECTS])
async def test_each_variant_connects(
    jarvis: RunningJarvis, name: str, variant: Variant, check: Callable[[Accounts], None]
) -> None:
    with protected_server(variant=variant) as server:
        server.accounts.cimd_redirect = jarvis.base_url + "/oauth/downstream/callback"
        token = await install(jarvis, name, server)
        page = await consent(jarvis, token, name, f"{name}-account")
        assert "Connected" in page, page
        assert await call(jarvis, token, name) == (False, f"{name}-account")
        check(server.accounts)


async def test_a_pre_registered_client(jarvis: RunningJarvis) -> None:
    """No registration offered: the admin's client (servers.oauth_clients, its secret from Jarvis's env) is used."""
    with protected_server(variant=Variant(registration=False, auth_methods=("client_secret_basic",))) as server:
        callback = jarvis.base_url + "/oauth/downstream/callback"
        server.accounts.clients["jarvis-pre"] = OAuthClientInformationFull(
            client_id="jarvis-pre",
            client_secret="pre-secret",
            token_endpoint_auth_method="client_secret_basic",
            redirect_uris=[AnyUrl(callback)],
            scope=SCOPE,
        )
        client = {
            "client_id": "jarvis-pre",
            "client_secret": "${JARVIS_TEST_PRE_SECRET}",
            "token_endpoint_auth_method": "client_secret_basic",
        }
        token = await install(jarvis, "preregistered", server, client)
        assert "Connected" in await consent(jarvis, token, "preregistered", "pat")
        assert await call(jarvis, token, "preregistered") == (False, "pat")
        assert list(server.accounts.clients) == ["jarvis-pre"]
        assert server.accounts.grants == ["authorization_code"]


FAILS = [
    ("wrong-issuer", Variant(issuer="https://someone-else.example"), "issuer"),
    ("garbage-metadata", Variant(metadata="garbage"), "failed"),
    ("as-down", Variant(down=True), "failed"),
    ("as-slow", Variant(slow=6.0), "did not answer within 3 s"),
]


@pytest.mark.parametrize(("name", "variant", "said"), FAILS, ids=[f[0] for f in FAILS])
async def test_an_authorization_server_that_cannot_be_used_is_named(
    jarvis: RunningJarvis, name: str, variant: Variant, said: str
) -> None:
    with protected_server(variant=variant) as server:
        token = await install(jarvis, name, server)
        failed, text = await call(jarvis, token, name)
        assert failed, text
        assert f"authorizing at server '{name}'" in text or said in text, text
        assert LINK.search(text) is None, text
        assert server.accounts.clients == {} or name == "wrong-issuer"
        async with mcp_client(jarvis.url(), token) as client:  # the aggregator serves on
            assert result_json(await client.call_tool("jarvis_server", {"action": "list"}))["count"] >= 1


async def test_a_token_endpoint_error_and_a_revoked_grant_go_back_to_consent(jarvis: RunningJarvis) -> None:
    with protected_server(variant=Variant(token_error=True)) as broken:
        token = await install(jarvis, "token-error", broken)
        page = await consent(jarvis, token, "token-error", "tess")
        assert "Not connected" in page
        assert "500" in page
        failed, text = await call(jarvis, token, "token-error")  # a new consent, no crash
        assert failed, text
        assert LINK.search(text) is not None, text

    with protected_server(variant=Variant(), token_seconds=1) as server:
        token = await install(jarvis, "revoked", server)
        assert "Connected" in await consent(jarvis, token, "revoked", "rita")
        assert await call(jarvis, token, "revoked") == (False, "rita")
        server.accounts.revoke_everything_of("rita")  # the refresh token is no longer taken either
        await asyncio.sleep(1.2)
        for _ in range(2):  # back to consent each time, never a crash loop
            failed, text = await call(jarvis, token, "revoked")
            assert failed, text
            assert LINK.search(text) is not None, text
        assert "Connected" in await consent(jarvis, token, "revoked", "rita")
        assert await call(jarvis, token, "revoked") == (False, "rita")


async def test_a_wrong_iss_in_the_authorization_response_connects_nothing(jarvis: RunningJarvis) -> None:
    with protected_server(variant=Variant(iss="https://mix-up.example")) as server:
        token = await install(jarvis, "wrong-iss", server)
        page = await consent(jarvis, token, "wrong-iss", "ivan")
        assert "Not connected" in page
        assert "iss" in page.lower()
        assert server.accounts.grants == []  # no code was exchanged


async def test_step_up_asks_again_for_the_larger_scope(jarvis: RunningJarvis) -> None:
    """Connected with `notes`; a tool needing more answers 403 insufficient_scope: consent again, for both."""
    with protected_server(variant=Variant(step_up=True)) as server:
        token = await install(jarvis, "step-up", server)
        assert "Connected" in await consent(jarvis, token, "step-up", "sam")
        assert await call(jarvis, token, "step-up") == (False, "sam")
        assert "Connected" in await consent(jarvis, token, "step-up", "sam", tool="admin_whoami")
        assert server.accounts.requested_scopes[-1] == [SCOPE, EXTRA]
        assert await call(jarvis, token, "step-up", "admin_whoami") == (False, "admin sam")
        assert await call(jarvis, token, "step-up") == (False, "sam")


async def call_approving(
    jarvis: RunningJarvis, token: str, name: str, mode: str, account: str
) -> tuple[types.CallToolResult, list[str]]:
    """`admin_whoami` called by a client in `mode` that takes URL elicitations, its person approving each consent
    link it is asked to open (signed in as `account`); the result, and the links asked."""
    asked: list[str] = []

    async def approve(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams), params
        asked.append(params.url)
        assert "Connected" in await asyncio.to_thread(browse, params.url, account)
        return types.ElicitResult(action="accept")

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(
            streamable_http_client(jarvis.url(f"/mcp/profile/{name}"), http_client=http),
            mode=mode,
            elicitation_callback=approve,
        ) as client,
    ):
        return await client.call_tool(f"{name}__admin_whoami", {}), asked


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_step_up_on_the_calls_retry_is_asked_and_the_call_goes_on(jarvis: RunningJarvis, mode: str) -> None:
    """A person never connected calls the tool that needs more: asked once to connect, the call's retry then meets
    the 403, so they are asked again in the same call (on its stream, or in a second input-required round), for both
    scopes; the call then answers."""
    with protected_server(variant=Variant(step_up=True)) as server:
        name = f"step-up-{mode[:6]}"
        result, asked = await call_approving(jarvis, await install(jarvis, name, server), name, mode, "una")
        assert (result.is_error, getattr(result.content[0], "text", "")) == (False, "admin una"), result.content
        assert len(asked) == 2
        assert server.accounts.requested_scopes == [[SCOPE], [SCOPE, EXTRA]]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_step_up_that_never_suffices_is_asked_three_times(jarvis: RunningJarvis, mode: str) -> None:
    """A server answering 403 insufficient_scope after every consent: the call asks for three consents (the retry
    limit), then answers a tool error with the link instead of asking again."""
    with protected_server(variant=Variant(step_up=True, never_enough=True)) as server:
        name = f"never-{mode[:6]}"
        result, asked = await call_approving(jarvis, await install(jarvis, name, server), name, mode, "vic")
        assert result.is_error
        assert LINK.search(str(getattr(result.content[0], "text", ""))), result.content
        assert len(asked) == 3
        assert len(server.accounts.requested_scopes) == 3


async def test_a_server_that_moves_to_another_authorization_server_is_followed(jarvis: RunningJarvis) -> None:
    """Connected at the first authorization server; the server's metadata then names a second one and the first's
    tokens stop working: the person is asked to consent again, there, and their calls go on as them."""
    with moving_server() as server:
        token = await install(jarvis, "moving", server.url)
        assert "Connected" in await consent(jarvis, token, "moving", "mo")
        assert await call(jarvis, token, "moving") == (False, "mo")
        server.move()
        server.first.revoke_everything_of("mo")
        assert "Connected" in await consent(jarvis, token, "moving", "mo-at-second")
        assert await call(jarvis, token, "moving") == (False, "mo-at-second")
        assert server.second.grants == ["authorization_code"]
        assert len(server.second.clients) == 1  # Jarvis registered there too
