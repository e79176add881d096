"""An OAuth-protected MCP server and its authorization server, on loopback, for Jarvis's per-person OAuth (issue 32).

In the MCP SDK's auth example style: the authorization server is the SDK's own (`create_auth_routes`: metadata,
dynamic registration, /authorize, /token with PKCE and refresh, /revoke) over an in-memory provider; the resource
server is a FastMCP-style `MCPServer` that verifies each bearer token against that provider and answers `whoami`
with the account the token was issued to. A person "signs in" by opening `/login?request=…&account=<name>`, which
is where /authorize sends the browser. Access tokens live `token_seconds`; every refresh is counted.
"""

from __future__ import annotations

import asyncio
import math
import re
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_metadata, create_auth_routes
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl, AnyUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from jarvis.aggregator.downstream.auth.consent import START_PATH as CONSENT_START_PATH
from tests.support.oidc_provider import login
from tests.support.stack import free_port

SCOPE = "notes"
EXTRA = "notes.extra"
OFFLINE = "offline_access"
_CONFIRM_FIELD = re.compile(r"<input type=hidden name=(\w+) value='([^']*)'>")


@dataclass(frozen=True)
class Variant:
    """What the authorization server and the resource server offer (one behaviour of the spec each)."""

    prm: str = "path"  # protected resource metadata at the path-based URL ("path") or only at the root ("root")
    header_scope: bool = True  # the 401's WWW-Authenticate names the scope; else PRM's scopes_supported does
    prm_scopes: tuple[str, ...] = (SCOPE,)
    registration: bool = True  # dynamic client registration offered
    cimd: bool = False  # client ID metadata documents accepted
    cimd_fetch: bool = False  # a document is fetched from its URL (the client id), as an authorization server does
    auth_methods: tuple[str, ...] | None = ("client_secret_post", "client_secret_basic")
    offline_access: bool = False  # `offline_access` among the authorization server's scopes
    issuer: str = ""  # a wrong `issuer` in the metadata
    metadata: str = "ok"  # "garbage": not JSON; "openid": only at /.well-known/openid-configuration
    token_error: bool = False  # the token endpoint fails the code exchange
    down: bool = False  # PRM names an authorization server that is not listening
    iss: str = ""  # a wrong `iss` in the authorization response
    slow: float = 0.0  # seconds the metadata takes
    step_up: bool = False  # `admin_whoami` needs EXTRA too: 403 insufficient_scope without it
    never_enough: bool = False  # with step_up: `admin_whoami` answers 403 insufficient_scope whatever the token holds


@dataclass
class Accounts:
    """The authorization server's state: clients, pending authorizations, codes, tokens (each to an account)."""

    issuer: str
    token_seconds: int = 3600
    variant: Variant = field(default_factory=Variant)
    cimd_redirect: str = ""  # the redirect URI a CIMD client (Jarvis's document) names
    requested_scopes: list[list[str]] = field(default_factory=list)  # per authorization request
    prm_requests: list[str] = field(default_factory=list)
    documents: list[dict[str, Any]] = field(default_factory=list)  # client ID metadata documents fetched (cimd_fetch)
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    pending: dict[str, tuple[str, AuthorizationParams]] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    access: dict[str, AccessToken] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)
    grants: list[str] = field(default_factory=list)  # "authorization_code" / "refresh_token", as they came

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        if self.variant.cimd_fetch and client_id.startswith(("http://", "https://")) and client_id not in self.clients:
            async with httpx2.AsyncClient(timeout=10) as http:
                answer = await http.get(client_id)
            document = answer.json() if answer.status_code == 200 else {}
            self.documents.append(document)
            if document.get("client_id") != client_id:  # a document names its own URL, else it is no client's
                return None
            self.clients[client_id] = OAuthClientInformationFull(
                client_id=client_id,
                redirect_uris=[AnyUrl(uri) for uri in document.get("redirect_uris", [])],
                token_endpoint_auth_method=document.get("token_endpoint_auth_method", "none"),
                scope=" ".join([SCOPE, EXTRA, OFFLINE]),
            )
        if self.variant.cimd and client_id.startswith("https://") and client_id not in self.clients:
            # Stands for fetching the document at `client_id`: Jarvis's is on an https URL the test cannot serve.
            self.clients[client_id] = OAuthClientInformationFull(
                client_id=client_id,
                redirect_uris=[AnyUrl(self.cimd_redirect)],
                token_endpoint_auth_method="none",
                scope=" ".join([SCOPE, EXTRA, OFFLINE]),
            )
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        client_info.scope = " ".join([SCOPE, EXTRA, OFFLINE])  # a client may ask for any; each person consents
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        request = secrets.token_urlsafe(12)
        self.requested_scopes.append(list(params.scopes or []))
        self.pending[request] = (client.client_id or "", params)
        return f"{self.issuer}/login?request={request}"

    def login(self, request: str, account: str) -> str:
        """The account signed in and approved: where the browser goes back to (the client's redirect URI)."""
        client_id, params = self.pending.pop(request)
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 300,
            client_id=client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=account,
        )
        issuer = self.variant.iss or str(AnyHttpUrl(self.issuer))  # as the metadata renders it (RFC 9207)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state, iss=issuer)

    def deny(self, request: str) -> str:
        _, params = self.pending.pop(request)
        return construct_redirect_uri(str(params.redirect_uri), error="access_denied", state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None, subject: str | None) -> OAuthToken:
        access, refresh = f"at-{secrets.token_urlsafe(16)}", f"rt-{secrets.token_urlsafe(16)}"
        # Rounded up: the token lives at least the `expires_in` it is issued with (rounded down, a 1 s token issued
        # late in a second would be refused before a client that trusts `expires_in` thinks it expired).
        expires = math.ceil(time.time()) + self.token_seconds
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource, subject=subject
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource, subject=subject
        )
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=self.token_seconds,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        self.grants.append("authorization_code")
        return self._issue(
            client.client_id or "", authorization_code.scopes, authorization_code.resource, authorization_code.subject
        )

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)  # rotated
        self.grants.append("refresh_token")
        return self._issue(
            client.client_id or "", scopes or refresh_token.scopes, refresh_token.resource, refresh_token.subject
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def revoke_everything_of(self, account: str) -> None:
        for store in (self.access, self.refresh):
            for key in [k for k, v in store.items() if v.subject == account]:
                del store[key]


def authorization_server(accounts: Accounts) -> Starlette:
    variant = accounts.variant

    async def login(request: Request) -> Response:
        query = request.query_params
        if query.get("deny"):
            return RedirectResponse(accounts.deny(query["request"]), status_code=302)
        return RedirectResponse(accounts.login(query["request"], query["account"]), status_code=302)

    registration = ClientRegistrationOptions(enabled=True, valid_scopes=[SCOPE, EXTRA, OFFLINE], default_scopes=[SCOPE])
    routes = create_auth_routes(
        accounts,  # type: ignore[arg-type]
        AnyHttpUrl(accounts.issuer),
        client_registration_options=registration,
        revocation_options=RevocationOptions(enabled=True),
    )
    built = build_metadata(AnyHttpUrl(accounts.issuer), None, registration, RevocationOptions(enabled=True))
    document = built.model_dump(mode="json", exclude_none=True)
    document["scopes_supported"] = [SCOPE, EXTRA, *([OFFLINE] if variant.offline_access else [])]
    if variant.auth_methods is None:
        document.pop("token_endpoint_auth_methods_supported", None)
    else:
        document["token_endpoint_auth_methods_supported"] = list(variant.auth_methods)
    if not variant.registration:
        document.pop("registration_endpoint", None)
    if variant.cimd:
        document["client_id_metadata_document_supported"] = True
    if variant.issuer:
        document["issuer"] = variant.issuer

    async def metadata(_: Request) -> Response:
        await asyncio.sleep(variant.slow)
        if variant.metadata == "garbage":
            return Response("<html>not metadata</html>", media_type="application/json")
        return JSONResponse(document)

    async def failing_token(_: Request) -> Response:
        return JSONResponse({"error": "server_error", "error_description": "the token store is down"}, 500)

    async def absent(_: Request) -> Response:
        return Response("not here", 404)

    oauth_path = "/.well-known/oauth-authorization-server"
    own = [Route("/login", login)]
    if variant.metadata == "openid":  # RFC 8414's URL answers 404: the client must try OpenID discovery
        own += [Route(oauth_path, absent), Route("/.well-known/openid-configuration", metadata)]
    else:
        own.append(Route(oauth_path, metadata))
    if variant.token_error:
        own.append(Route("/token", failing_token, methods=["POST"]))
    return Starlette(routes=[*own, *routes])


class _ResourceMetadata:
    """Wraps the MCP server: serves PRM where the variant says, words the 401's challenge as it says, and (step-up)
    answers 403 insufficient_scope to a call of `admin_whoami` whose token lacks EXTRA."""

    def _has_extra(self, scope: Any) -> bool:
        headers = dict(scope.get("headers") or [])
        token = headers.get(b"authorization", b"").decode().removeprefix("Bearer ").strip()
        found = self.accounts.access.get(token)
        return found is not None and EXTRA in found.scopes

    def __init__(self, app: Any, accounts: Accounts, url: str, issuer: str) -> None:
        self.app, self.accounts, self.url, self.issuer = app, accounts, url, issuer

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        variant, path = self.accounts.variant, scope.get("path", "")
        if scope["type"] == "http" and path.startswith("/.well-known/oauth-protected-resource"):
            self.accounts.prm_requests.append(path)
            served = "/.well-known/oauth-protected-resource" + ("/mcp" if variant.prm == "path" else "")
            if path != served:
                await Response("not here", 404)(scope, receive, send)
                return
            body = {
                "resource": self.url,
                "authorization_servers": [self.issuer],
                "scopes_supported": list(variant.prm_scopes),
            }
            await JSONResponse(body)(scope, receive, send)
            return

        if variant.step_up and scope["type"] == "http" and scope.get("method") == "POST":
            chunks: list[bytes] = []
            more, incoming = True, receive
            while more:
                message = await incoming()
                chunks.append(message.get("body", b""))
                more = message.get("more_body", False)
            request_body = b"".join(chunks)
            replayed = False

            async def replay() -> Any:
                nonlocal replayed
                if replayed:
                    return await incoming()
                replayed = True
                return {"type": "http.request", "body": request_body, "more_body": False}

            if b'"admin_whoami"' in request_body and (variant.never_enough or not self._has_extra(scope)):
                words = f'Bearer error="insufficient_scope", scope="{SCOPE} {EXTRA}"'
                await Response("", 403, headers={"www-authenticate": words})(scope, replay, send)
                return
            receive = replay

        async def challenge(message: Any) -> None:
            if message["type"] == "http.response.start" and message["status"] == 401:
                words = 'Bearer error="invalid_token"' + (f', scope="{SCOPE}"' if variant.header_scope else "")
                headers = [(k, v) for k, v in message["headers"] if k.lower() != b"www-authenticate"]
                message = {**message, "headers": [*headers, (b"www-authenticate", words.encode())]}
            await send(message)

        await self.app(scope, receive, challenge)


class _AnyOf:
    """Token verification against several authorization servers (a server moving from one to another)."""

    def __init__(self, accounts: list[Accounts]) -> None:
        self.accounts = accounts

    async def verify_token(self, token: str) -> AccessToken | None:
        for accounts in self.accounts:
            if (found := await accounts.load_access_token(token)) is not None:
                return found
        return None


def resource_server(
    accounts: Accounts, url: str, issuer: str | None = None, trusted: list[Accounts] | None = None
) -> Any:
    """The protected MCP server at `url` (its path /mcp): `whoami` answers the account of the caller's token."""
    server = MCPServer(
        "notes",
        token_verifier=_AnyOf(trusted or [accounts]),
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(accounts.issuer),
            resource_server_url=AnyHttpUrl(url),
            validate_token_resource=True,
            required_scopes=[SCOPE],
        ),
    )

    @server.tool()
    def admin_whoami() -> str:
        """The account, for callers whose token has the extra scope (the wrapper checks it)."""
        token = get_access_token()
        return f"admin {token.subject}" if token is not None else ""

    @server.tool()
    def whoami() -> str:
        """The account this call is authorized as."""
        token = get_access_token()
        return token.subject or "" if token is not None else ""

    app = server.streamable_http_app()
    return _ResourceMetadata(app, accounts, url, issuer) if issuer is not None else app


@contextmanager
def _serve(app: Any, host: str, port: int) -> Iterator[None]:
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, name=f"oauth-fake-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError(f"server on port {port} did not start")
        time.sleep(0.02)
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(10)


@dataclass
class ProtectedServer:
    url: str  # the MCP endpoint
    accounts: Accounts


@contextmanager
def protected_server(
    *,
    server_host: str = "127.0.0.1",
    issuer_host: str = "localhost",
    token_seconds: int = 3600,
    variant: Variant | None = None,
) -> Iterator[ProtectedServer]:
    """The authorization server at http://`issuer_host`:<port>, the MCP server at http://`server_host`:<port>/mcp.

    With a `variant`, the resource server's metadata and challenge follow it (and PRM names a closed port when the
    variant's authorization server is `down`)."""
    as_port, rs_port = free_port(), free_port()
    accounts = Accounts(f"http://{issuer_host}:{as_port}", token_seconds, variant or Variant())
    url = f"http://{server_host}:{rs_port}/mcp"
    bind = "127.0.0.1"
    named = None
    if variant is not None:
        named = f"http://{issuer_host}:{free_port()}" if variant.down else str(AnyHttpUrl(accounts.issuer))
    resource = resource_server(accounts, url, named)
    with _serve(authorization_server(accounts), bind, as_port), _serve(resource, bind, rs_port):
        yield ProtectedServer(url, accounts)


@dataclass
class MovingServer:
    """A protected server whose metadata can move it from its first authorization server to a second one."""

    url: str
    first: Accounts
    second: Accounts
    metadata: _ResourceMetadata

    def move(self) -> None:
        self.metadata.issuer = str(AnyHttpUrl(self.second.issuer))


@contextmanager
def moving_server() -> Iterator[MovingServer]:
    first_port, second_port, rs_port = free_port(), free_port(), free_port()
    first, second = Accounts(f"http://localhost:{first_port}"), Accounts(f"http://localhost:{second_port}")
    url = f"http://127.0.0.1:{rs_port}/mcp"
    resource = resource_server(first, url, str(AnyHttpUrl(first.issuer)), trusted=[first, second])
    assert isinstance(resource, _ResourceMetadata)
    with (
        _serve(authorization_server(first), "127.0.0.1", first_port),
        _serve(authorization_server(second), "127.0.0.1", second_port),
        _serve(resource, "127.0.0.1", rs_port),
    ):
        yield MovingServer(url, first, second, resource)


def open_consent_link(browser: httpx2.Client, link: str, signed_in_as: str | None = None) -> httpx2.Response:
    """Open a consent link as a person would: confirm the page a token's link shows, or sign in at the team's
    provider as `signed_in_as` where the link is a signed-in person's; the answer that follows (a redirect to the
    server's authorization server when the link opened, else Jarvis's page saying why not)."""
    response = browser.get(link)
    if response.status_code == 200 and f"action='{CONSENT_START_PATH}'" in response.text:
        fields = dict(_CONFIRM_FIELD.findall(response.text))
        return browser.post(response.url.join(CONSENT_START_PATH), data=fields)
    if response.status_code == 303:
        assert signed_in_as is not None, "this link asks for a sign-in at the team's provider: pass signed_in_as"
        response = browser.get(response.headers["location"])
        for _ in range(10):  # the provider's interaction, its login form, and back to Jarvis
            if response.is_redirect:
                target = response.url.join(response.headers["location"])
                response = browser.get(target)
                if target.path == "/oauth/callback":
                    return response
            elif response.status_code == 200 and 'name="login"' in response.text:
                response = login(browser, response, signed_in_as)
            else:
                break
        raise AssertionError(f"the sign-in did not come back to Jarvis: {response.status_code} {response.text[:500]}")
    return response


def consent_in_browser(
    link: str, account: str, *, signed_in_as: str | None = None, fresh_connections: bool = False
) -> httpx2.Client:
    """Open `link` in a fresh browser (signing in to Jarvis's provider as `signed_in_as` where the link asks), sign
    in at the server's authorization server as `account`, follow back to Jarvis; the browser, for more. With
    `fresh_connections`, every request opens a connection of its own (with several workers, each may reach any)."""
    browser = (
        httpx2.Client(timeout=30, limits=httpx2.Limits(max_keepalive_connections=0))
        if fresh_connections
        else httpx2.Client(timeout=30)
    )
    start = open_consent_link(browser, link, signed_in_as)
    assert start.status_code == 302, start.text
    authorize = browser.get(start.headers["location"])
    assert authorize.status_code == 302, authorize.text
    login_answer = browser.get(authorize.headers["location"] + f"&account={account}")
    assert login_answer.status_code == 302, login_answer.text
    back = browser.get(login_answer.headers["location"])
    assert back.status_code == 200, back.text
    assert "Connected" in back.text
    return browser
