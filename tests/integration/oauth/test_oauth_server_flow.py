"""The authorization server end to end over HTTP with a real OpenID provider and registry: sign-in, consent, code
exchange, refresh rotation; and the attacks of issue 31, each refused with an OAuth error and a reason."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.integration.oauth.conftest import Stack
from tests.support.http_fake import serve_app
from tests.support.signin import CLIENT_REDIRECT, MemoryStorage, Person, client_metadata, pkce


def register(stack: Stack, **extra: object) -> str:
    body = {"redirect_uris": [CLIENT_REDIRECT], "client_name": "flow test", "token_endpoint_auth_method": "none"}
    answer = httpx2.post(f"{stack.base}/oauth/register", json={**body, **extra})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["client_id"])


def authorize_url(stack: Stack, client_id: str, challenge: str | None, **params: str) -> str:
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": CLIENT_REDIRECT,
        "state": "client-state",
        "resource": f"{stack.base}/mcp/jarvis",
        "scope": "jarvis",
    }
    if challenge is not None:
        query.update(code_challenge=challenge, code_challenge_method="S256")
    query.update(params)
    return f"{stack.base}/oauth/authorize?{urlencode(query)}"


def redirected(response: httpx2.Response) -> dict[str, str]:
    assert response.is_redirect, f"{response.status_code}: {response.text[:500]}"
    assert response.headers["location"].startswith(CLIENT_REDIRECT)
    return {k: v[0] for k, v in parse_qs(urlsplit(response.headers["location"]).query).items()}


def sign_in(stack: Stack, account: str = "alice", **params: str) -> tuple[str, str, dict[str, str]]:
    """(client_id, code_verifier, the answer at the client's redirect_uri)."""
    client_id = register(stack)
    verifier, challenge = pkce()
    person = Person(account)
    try:
        return client_id, verifier, redirected(person.authorize(authorize_url(stack, client_id, challenge, **params)))
    finally:
        person.close()


def token(stack: Stack, **form: str) -> httpx2.Response:
    return httpx2.post(f"{stack.base}/oauth/token", data=form)


def refused(response: httpx2.Response, error: str) -> str:
    assert response.status_code in (400, 401), response.text
    body = response.json()
    assert body["error"] == error, body
    assert body["error_description"]
    return str(body["error_description"])


def redeem(stack: Stack, client_id: str, verifier: str, code: str) -> httpx2.Response:
    return token(
        stack,
        grant_type="authorization_code",
        code=code,
        code_verifier=verifier,
        client_id=client_id,
        redirect_uri=CLIENT_REDIRECT,
    )


def test_alice_signs_in_and_her_refresh_token_rotates(stack: Stack) -> None:
    client_id, verifier, answer = sign_in(stack)
    assert answer["state"] == "client-state"
    assert answer["iss"] == stack.base
    tokens = redeem(stack, client_id, verifier, answer["code"])
    assert tokens.status_code == 200, tokens.text
    body = tokens.json()
    assert body["scope"] == "jarvis"
    claims = stack.keys.verify(body["access_token"])
    assert claims["sub"] == "alice"
    assert claims["aud"] == f"{stack.base}/mcp/jarvis"
    assert claims["iss"] == stack.base
    rotated = token(stack, grant_type="refresh_token", refresh_token=body["refresh_token"], client_id=client_id)
    assert rotated.status_code == 200, rotated.text
    assert rotated.json()["refresh_token"] != body["refresh_token"]
    # The old refresh token used again: reuse, so the whole family goes, the new one with it.
    reused = token(stack, grant_type="refresh_token", refresh_token=body["refresh_token"], client_id=client_id)
    assert "already used" in refused(reused, "invalid_grant")
    newest = token(
        stack, grant_type="refresh_token", refresh_token=rotated.json()["refresh_token"], client_id=client_id
    )
    refused(newest, "invalid_grant")


def test_a_replayed_code_fails_and_revokes_what_it_issued(stack: Stack) -> None:
    client_id, verifier, answer = sign_in(stack)
    first = redeem(stack, client_id, verifier, answer["code"])
    assert first.status_code == 200
    assert "already used" in refused(redeem(stack, client_id, verifier, answer["code"]), "invalid_grant")
    after = token(stack, grant_type="refresh_token", refresh_token=first.json()["refresh_token"], client_id=client_id)
    refused(after, "invalid_grant")


def test_a_code_or_refresh_token_sent_four_times_at_once_leaves_nothing_usable(stack: Stack) -> None:
    """Issue 44, finding 9: four redemptions of one code, and four refreshes with one refresh token, each at once.
    One wins; the other three are replays, so what the winner was issued goes with the revoked family, whichever
    was stored first."""

    def at_once(form: dict[str, str]) -> list[httpx2.Response]:
        with ThreadPoolExecutor(4) as pool:
            return list(pool.map(lambda _: token(stack, **form), range(4)))

    def refreshed(client_id: str, refresh_token: str) -> httpx2.Response:
        return token(stack, grant_type="refresh_token", refresh_token=refresh_token, client_id=client_id)

    for _ in range(3):
        client_id, verifier, answer = sign_in(stack)
        code = {
            "grant_type": "authorization_code",
            "code": answer["code"],
            "code_verifier": verifier,
            "client_id": client_id,
            "redirect_uri": CLIENT_REDIRECT,
        }
        won = [r for r in at_once(code) if r.status_code == 200]
        assert len(won) == 1
        refused(refreshed(client_id, won[0].json()["refresh_token"]), "invalid_grant")

        client_id, verifier, answer = sign_in(stack)
        issued = redeem(stack, client_id, verifier, answer["code"])
        rotation = {
            "grant_type": "refresh_token",
            "refresh_token": issued.json()["refresh_token"],
            "client_id": client_id,
        }
        won = [r for r in at_once(rotation) if r.status_code == 200]
        assert len(won) == 1
        refused(refreshed(client_id, won[0].json()["refresh_token"]), "invalid_grant")


def test_a_wrong_verifier_or_another_client_is_refused(stack: Stack) -> None:
    client_id, _, answer = sign_in(stack)
    assert "PKCE" in refused(redeem(stack, client_id, "x" * 50, answer["code"]), "invalid_grant")
    client_id, verifier, answer = sign_in(stack)
    other = register(stack)
    assert "another client" in refused(redeem(stack, other, verifier, answer["code"]), "invalid_grant")


@pytest.mark.parametrize("method", [None, "plain"])
def test_missing_or_plain_pkce_is_refused_on_a_page(stack: Stack, method: str | None) -> None:
    client_id = register(stack)
    extra = {"code_challenge": "a" * 43, "code_challenge_method": method} if method else {}
    response = httpx2.get(authorize_url(stack, client_id, None, **extra))
    assert response.status_code == 400
    assert "location" not in response.headers
    assert "S256" in response.text


def test_a_registered_phishing_uri_gets_no_redirect_for_a_broken_request(stack: Stack) -> None:
    """Issue 44, finding 8: a stranger registers a redirect URI of theirs and sends people an authorization request
    broken on purpose; Jarvis answers on its own page, before anyone signed in, instead of bouncing to that URI."""
    registered = httpx2.post(
        f"{stack.base}/oauth/register",
        json={"redirect_uris": ["https://evil.example/phish"], "token_endpoint_auth_method": "none"},
    )
    assert registered.status_code == 201, registered.text
    client_id = registered.json()["client_id"]
    for query in ({"response_type": "x"}, {"response_type": "code"}, {"response_type": "code", "scope": "nonsense"}):
        response = httpx2.get(f"{stack.base}/oauth/authorize", params={"client_id": client_id, **query})
        assert response.status_code == 400, response.text
        assert "location" not in response.headers
        assert "evil.example" not in response.text


def test_an_unregistered_redirect_uri_gets_a_page_not_a_redirect(stack: Stack) -> None:
    client_id = register(stack)
    _, challenge = pkce()
    response = httpx2.get(authorize_url(stack, client_id, challenge, redirect_uri="https://attacker.example/cb"))
    assert response.status_code == 400
    assert "location" not in response.headers
    assert "redirect_uri is not one this client registered" in response.text
    unknown = httpx2.get(authorize_url(stack, "jc_nobody", challenge))
    assert unknown.status_code == 400
    assert "location" not in unknown.headers


def test_a_resource_that_is_not_jarvis_is_invalid_target(stack: Stack) -> None:
    client_id = register(stack)
    _, challenge = pkce()
    response = httpx2.get(authorize_url(stack, client_id, challenge, resource="https://other.example/mcp"))
    assert response.status_code == 400
    assert "location" not in response.headers
    assert "invalid_target" in response.text
    assert "not an MCP surface of this Jarvis" in response.text


def test_the_callback_refuses_a_missing_or_unknown_state(stack: Stack) -> None:
    missing = httpx2.get(f"{stack.base}/oauth/callback?code=abc")
    assert missing.status_code == 400
    assert "no state" in missing.text
    wrong = httpx2.get(f"{stack.base}/oauth/callback?code=abc&state=forged")
    assert wrong.status_code == 400
    assert "unknown, expired or already used" in wrong.text


def test_a_person_without_a_matching_role_gets_nothing(stack: Stack) -> None:
    client_id = register(stack)
    _, challenge = pkce()
    bob = Person("bob", decision="back")  # the page's one button
    try:
        answer = redirected(bob.authorize(authorize_url(stack, client_id, challenge)))
        assert bob.last_page is not None
        said = "Signed in as Bob Example (groups: ops); no Jarvis role grants what flow test asks for"
        assert said in bob.last_page.text
        assert (
            "<code>jarvis role set &lt;name&gt; --group &lt;group&gt; --scope &lt;scope&gt;</code>"
            in bob.last_page.text
        )
        assert bob.last_page.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in bob.last_page.headers["content-security-policy"]
    finally:
        bob.close()
    # The client hears what happened: nobody declined anything.
    assert answer["error"] == "access_denied"
    assert answer["error_description"].startswith(said)
    assert "jarvis role set <name> --group <group> --scope <scope>" in answer["error_description"]
    assert "declined" not in answer["error_description"]


def test_revocation_ends_a_refresh_token(stack: Stack) -> None:
    client_id, verifier, answer = sign_in(stack)
    refresh = redeem(stack, client_id, verifier, answer["code"]).json()["refresh_token"]
    assert httpx2.post(f"{stack.base}/oauth/revoke", data={"token": refresh, "client_id": client_id}).status_code == 200
    refused(token(stack, grant_type="refresh_token", refresh_token=refresh, client_id=client_id), "invalid_grant")


def test_registration_and_token_requests_with_bad_input(stack: Stack) -> None:
    bad = httpx2.post(f"{stack.base}/oauth/register", json={"redirect_uris": ["http://evil.example/cb"]})
    assert "https" in refused(bad, "invalid_redirect_uri")
    refused(httpx2.post(f"{stack.base}/oauth/register", content=b"not json"), "invalid_client_metadata")
    client_id = register(stack)
    refused(token(stack, grant_type="password", client_id=client_id), "unsupported_grant_type")
    refused(token(stack, grant_type="authorization_code", client_id="jc_unknown"), "invalid_client")
    as_json = httpx2.post(f"{stack.base}/oauth/token", json={"grant_type": "refresh_token"})
    refused(as_json, "invalid_request")


async def _slow(_: Request) -> Response:
    await asyncio.sleep(8)
    return JSONResponse({})


@pytest.fixture(scope="module")
def documents() -> Iterator[str]:
    """A host serving client metadata documents: a good one, a huge one and a slow one."""

    async def good(request: Request) -> Response:
        return JSONResponse(
            {"client_id": str(request.url), "client_name": "CIMD client", "redirect_uris": [CLIENT_REDIRECT]}
        )

    async def huge(request: Request) -> Response:
        return Response(
            json.dumps({"client_id": str(request.url), "pad": "x" * 200_000}), media_type="application/json"
        )

    app = Starlette(routes=[Route("/good.json", good), Route("/huge.json", huge), Route("/slow.json", _slow)])
    with serve_app(app) as base:
        yield base


def test_client_metadata_documents_are_fetched_with_limits(stack: Stack, documents: str) -> None:
    _, challenge = pkce()
    good = httpx2.get(authorize_url(stack, f"{documents}/good.json", challenge))
    assert good.is_redirect  # on to the identity provider
    assert not good.headers["location"].startswith(CLIENT_REDIRECT)
    for url, reason in (
        ("https://10.0.0.1/client.json", "internal address"),
        ("https://169.254.169.254/latest/meta-data", "internal address"),
        (f"{documents}/huge.json", "larger than 64 KiB"),
        (f"{documents}/slow.json", "did not arrive within 5 s"),
    ):
        asked = authorize_url(stack, url, challenge)
        response = httpx2.get(asked, headers={"Accept": "application/json"}, timeout=30)
        assert reason in refused(response, "invalid_client"), url
    # A browser gets the same refusal as a page, never raw JSON (issue 48 item 2).
    browser = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,application/json;q=0.8,*/*;q=0.7"}
    page = httpx2.get(authorize_url(stack, "https://10.0.0.1/client.json", challenge), headers=browser, timeout=30)
    assert page.status_code == 400
    assert page.headers["content-type"].startswith("text/html")
    assert "Sign-in refused" in page.text
    assert "internal address" in page.text


def _at_provider(stack: Stack) -> str:
    """Start an authorization; the state Jarvis sent the provider (what the provider would send back)."""
    client_id = register(stack)
    _, challenge = pkce()
    response = httpx2.get(authorize_url(stack, client_id, challenge))
    assert response.is_redirect
    return parse_qs(urlsplit(response.headers["location"]).query)["state"][0]


def test_an_answer_from_another_provider_is_a_mix_up(stack: Stack) -> None:
    state = _at_provider(stack)
    response = httpx2.get(
        f"{stack.base}/oauth/callback", params={"state": state, "code": "x", "iss": "https://evil.example"}
    )
    answer = redirected(response)
    assert answer["error"] == "access_denied"
    assert "another identity provider" in answer["error_description"]
    # The state was used up: the real answer arriving after it is refused too.
    again = httpx2.get(f"{stack.base}/oauth/callback", params={"state": state, "code": "x"})
    assert again.status_code == 400


def test_a_refusal_at_the_provider_reaches_the_client(stack: Stack) -> None:
    state = _at_provider(stack)
    answer = redirected(httpx2.get(f"{stack.base}/oauth/callback", params={"state": state, "error": "access_denied"}))
    assert answer["error"] == "access_denied"
    assert answer["state"] == "client-state"


def test_the_consent_form_needs_its_csrf_cookie_and_a_yes(stack: Stack) -> None:
    forged = httpx2.post(f"{stack.base}/oauth/consent", data={"consent": "c", "csrf": "x", "decision": "allow"})
    assert forged.status_code == 400
    assert "CSRF" in forged.text
    client_id = register(stack)
    _, challenge = pkce()
    alice = Person("alice", decision="deny")
    try:
        answer = redirected(alice.authorize(authorize_url(stack, client_id, challenge)))
    finally:
        alice.close()
    assert answer["error"] == "access_denied"
    assert "declined" in answer["error_description"]


def test_a_confidential_client_must_send_its_secret(stack: Stack) -> None:
    made = httpx2.post(
        f"{stack.base}/oauth/register",
        json={"redirect_uris": [CLIENT_REDIRECT], "token_endpoint_auth_method": "client_secret_basic"},
    ).json()
    without = token(stack, grant_type="refresh_token", refresh_token="x", client_id=made["client_id"])
    assert without.status_code == 401
    assert "client_secret" in refused(without, "invalid_client")
    wrong = httpx2.post(
        f"{stack.base}/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": "x"},
        auth=(made["client_id"], "nope"),
    )
    refused(wrong, "invalid_client")
    right = httpx2.post(
        f"{stack.base}/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": "x"},
        auth=(made["client_id"], made["client_secret"]),
    )
    refused(right, "invalid_grant")  # authenticated: now the (made-up) refresh token is what is refused


@pytest.mark.anyio
async def test_the_sdk_oauth_client_signs_in_through_jarvis(stack: Stack) -> None:
    """The MCP python SDK's OAuthClientProvider: 401, resource metadata, this server's metadata, registration,
    Jarvis's authorize (with resource), alice's login at the provider and consent, code exchange, the call again."""
    redirects: list[str] = []
    alice = Person("alice")

    async def redirect_handler(url: str) -> None:
        redirects.append(url)

    async def callback_handler() -> AuthorizationCodeResult:
        return alice.code_result(await asyncio.to_thread(alice.authorize, redirects[-1]))

    storage = MemoryStorage()
    auth = OAuthClientProvider(
        server_url=f"{stack.base}/mcp/jarvis",
        client_metadata=client_metadata(),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    try:
        async with httpx2.AsyncClient(auth=auth, timeout=60) as http:
            answer = await http.get(f"{stack.base}/mcp/jarvis")
    finally:
        alice.close()
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"sub": "alice", "scope": "jarvis"}
    assert storage.tokens is not None
    assert storage.tokens.refresh_token
    assert "resource=" in redirects[-1]


def test_a_token_for_another_resource_than_authorized_is_invalid_target(stack: Stack) -> None:
    client_id, verifier, answer = sign_in(stack)
    form = {
        "grant_type": "authorization_code",
        "code": answer["code"],
        "code_verifier": verifier,
        "client_id": client_id,
        "redirect_uri": CLIENT_REDIRECT,
    }
    other = token(stack, **form, resource=f"{stack.base}/mcp/orchestrator")
    assert "differs from the one the person authorized" in refused(other, "invalid_target")
    foreign = token(
        stack, grant_type="refresh_token", refresh_token="x", client_id=client_id, resource="https://x.example/mcp"
    )
    refused(foreign, "invalid_grant")  # the refresh token is checked first: a made-up one says nothing of resources


def test_granted_scopes_are_the_intersection_and_a_refresh_only_narrows(stack: Stack) -> None:
    """Decision 0055: bob (role: orchestrator) asking for `admin` gets his role's scope, never more; alice (roles:
    jarvis, read) asking for both gets both; a refresh may ask for a scope inside what was granted, not beside it."""
    bob_client, bob_verifier, bob_answer = sign_in(stack, "bob", scope="admin")
    assert redeem(stack, bob_client, bob_verifier, bob_answer["code"]).json()["scope"] == "orchestrator"
    client_id, verifier, answer = sign_in(stack, scope="jarvis read offline_access")
    tokens = redeem(stack, client_id, verifier, answer["code"]).json()
    assert tokens["scope"] == "jarvis read"
    narrower = token(
        stack,
        grant_type="refresh_token",
        refresh_token=tokens["refresh_token"],
        client_id=client_id,
        scope="jarvis:jarvis_server",
    )
    assert narrower.status_code == 200, narrower.text
    assert narrower.json()["scope"] == "jarvis:jarvis_server"
    beside = token(
        stack,
        grant_type="refresh_token",
        refresh_token=narrower.json()["refresh_token"],
        client_id=client_id,
        scope="jarvis",  # wider than what the last refresh kept
    )
    assert "only narrow" in refused(beside, "invalid_scope")
    # The refused request did not use the refresh token up: the client still refreshes with it.
    again = token(
        stack, grant_type="refresh_token", refresh_token=narrower.json()["refresh_token"], client_id=client_id
    )
    assert again.status_code == 200, again.text
    assert again.json()["scope"] == "jarvis:jarvis_server"
