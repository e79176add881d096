"""A person signing in through Jarvis: a cookie-keeping HTTP client that follows Jarvis's authorize redirect to the
OpenID provider, posts its login form, follows back through Jarvis's consent page and stops at the redirect to the
MCP client; an in-memory token store for the SDK's OAuth client, and that client walked through by a person."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
import secrets
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from tests.support.oidc_provider import login, oidc_provider
from tests.support.stack import RunningJarvis, free_port, start_jarvis

CLIENT_REDIRECT = "http://127.0.0.1:9/callback"  # never listened on: the person's browser stops before it
_HIDDEN = re.compile(r"<input type=hidden name=(?P<name>\w+) value='(?P<value>[^']*)'>")


def pkce() -> tuple[str, str]:
    """A client's PKCE pair: (code_verifier, its S256 code_challenge)."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


class MemoryStorage(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def client_metadata(name: str = "e2e MCP client") -> OAuthClientMetadata:
    return OAuthClientMetadata.model_validate(
        {
            "redirect_uris": [CLIENT_REDIRECT],
            "client_name": name,
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
        }
    )


class Person:
    """One person's browser: cookies kept, redirects followed by hand so each stop can be looked at."""

    def __init__(self, account: str, decision: str = "allow", keepalive: bool = True) -> None:
        self.account = account
        self.decision = decision
        limits = httpx2.Limits() if keepalive else httpx2.Limits(max_keepalive_connections=0)
        self.http = httpx2.Client(timeout=30, limits=limits)
        self.last_page: httpx2.Response | None = None

    def close(self) -> None:
        self.http.close()

    def authorize(self, url: str, stop_at: str = CLIENT_REDIRECT) -> httpx2.Response:
        """Walk from `url` to the redirect to `stop_at` (returned), or to a page that goes nowhere (returned)."""
        response = self.http.get(url)
        for _ in range(20):
            if response.is_redirect:
                target = str(response.url.join(response.headers["location"]))
                if target.startswith(stop_at):
                    return response
                response = self.http.get(target)
            elif response.status_code == 200 and 'name="login"' in response.text:
                response = login(self.http, response, self.account)
            elif response.status_code == 200 and "/oauth/consent" in response.text:
                self.last_page = response
                fields = dict(_HIDDEN.findall(response.text))
                fields["decision"] = self.decision
                response = self.http.post(response.url.join("/oauth/consent"), data=fields)
            else:
                return response
        raise AssertionError(f"sign-in went round in circles at {response.url}")

    def code_result(self, redirect: httpx2.Response) -> AuthorizationCodeResult:
        query = parse_qs(urlsplit(redirect.headers["location"]).query)
        assert "code" in query, f"no code in the redirect: {redirect.headers['location']}"
        return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0], iss=query.get("iss", [None])[0])


def authorize_query(jarvis: RunningJarvis, client_id: str) -> dict[str, str]:
    """An authorization request's query for `client_id` at /mcp/jarvis, PKCE included (for requests a test sends
    itself, where no person follows)."""
    return {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": CLIENT_REDIRECT,
        "state": "s",
        "code_challenge": pkce()[1],
        "code_challenge_method": "S256",
        "resource": jarvis.url("/mcp/jarvis"),
        "scope": "jarvis",
    }


def authorization_request(
    jarvis: RunningJarvis, redirect: str, scope: str, state: str = "s1", name: str = "e2e MCP client"
) -> tuple[str, str, str]:
    """A public client registered for `redirect`: (its client id, a PKCE code verifier, the authorization URL it
    sends the person to, for the surface /mcp/jarvis)."""
    registered = httpx2.post(
        jarvis.url("/oauth/register"),
        json={"redirect_uris": [redirect], "client_name": name, "token_endpoint_auth_method": "none"},
    )
    assert registered.status_code == 201, registered.text
    client_id = registered.json()["client_id"]
    verifier, challenge = pkce()
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect,
        "state": state,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": jarvis.url("/mcp/jarvis"),
        "scope": scope,
    }
    return client_id, verifier, f"{jarvis.url('/oauth/authorize')}?{urlencode(query)}"


def sign_in_via_jarvis(
    jarvis: RunningJarvis, account: str, scope: str, keepalive: bool = True
) -> tuple[str, httpx2.Response, Person]:
    """Register a client, walk `account` through Jarvis and the provider, redeem the code: (client id, the token
    answer, the person, whose last page is Jarvis's consent page). Without keepalive each request takes a connection
    of its own, so where several workers share the port the steps land on different ones."""
    client_id, verifier, start = authorization_request(jarvis, CLIENT_REDIRECT, scope)
    person = Person(account, keepalive=keepalive)
    try:
        redirect = person.authorize(start)
    finally:
        person.close()
    if "code=" not in redirect.headers.get("location", ""):
        return client_id, redirect, person
    answer = person.code_result(redirect)
    assert answer.iss == jarvis.base_url
    form = {
        "grant_type": "authorization_code",
        "code": answer.code,
        "code_verifier": verifier,
        "client_id": client_id,
        "redirect_uri": CLIENT_REDIRECT,
    }
    return client_id, httpx2.post(jarvis.url("/oauth/token"), data=form), person


@asynccontextmanager
async def signed_in_client(jarvis: RunningJarvis, person: Person, path: str = "/mcp/jarvis") -> AsyncIterator[Client]:
    """The SDK's MCP client with its OAuth provider: a 401 starts the sign-in, which `person` walks through."""
    redirects: list[str] = []

    async def redirect_handler(url: str) -> None:
        redirects.append(url)

    async def callback_handler():  # type: ignore[no-untyped-def]
        response = await asyncio.to_thread(person.authorize, redirects[-1])
        return person.code_result(response)

    auth = OAuthClientProvider(
        server_url=jarvis.url(path),
        client_metadata=client_metadata(),
        storage=MemoryStorage(),
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    async with (
        httpx2.AsyncClient(auth=auth, timeout=60) as http,
        Client(streamable_http_client(jarvis.url(path), http_client=http), mode="legacy") as client,
    ):
        yield client


@contextmanager
def signin_jarvis(
    tmp: pytest.TempPathFactory, *extra_args: str, env: dict[str, str] | None = None, groups_claim: str = "groups"
) -> Iterator[RunningJarvis]:
    """`jarvis up --require-auth` with sign-in federated to a fresh oidc-provider at its defaults (claims in
    userinfo) putting groups at `groups_claim`, and two roles: group dev gets `jarvis`, group ops gets
    `jarvis:jarvis_check_status` only."""
    port = free_port()
    with oidc_provider([f"http://127.0.0.1:{port}/oauth/callback"], groups_claim=groups_claim) as provider:
        running = start_jarvis(
            tmp.mktemp("signin"),
            "--require-auth",
            *extra_args,
            port=port,
            env={
                "HOME": str(tmp.mktemp("home")),
                "JARVIS_OIDC_ISSUER": provider.issuer,
                "JARVIS_OIDC_CLIENT_ID": provider.client_id,
                "JARVIS_OIDC_CLIENT_SECRET": provider.client_secret,
                "JARVIS_OAUTH_CIMD_ALLOW_LOOPBACK": "1",
                "JARVIS_OAUTH_KEYS_DIR": str(tmp.mktemp("keys")),
                **(env or {}),
            },
        )
        try:
            running.cli("role", "set", "developers", "--group", "dev", "--scope", "jarvis")
            running.cli("role", "set", "operators", "--group", "ops", "--scope", "jarvis:jarvis_check_status")
            yield running
        finally:
            running.stop()
