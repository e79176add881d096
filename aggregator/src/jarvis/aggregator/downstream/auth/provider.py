"""The MCP SDK's OAuth client (mcp.client.auth.OAuthClientProvider) for one person at one server.

The SDK does the protocol: protected resource metadata (from `WWW-Authenticate`, path-based then root), the
authorization server's metadata (RFC 8414 then OpenID discovery, its `issuer` checked, `iss` in the response
checked), the client (CIMD URL, else dynamic registration; a pre-registered one is stored beforehand), PKCE S256,
`resource`, scopes (the challenge's, else `scopes_supported`), step-up on `insufficient_scope`, token endpoint auth
as registered, refresh. Jarvis adds what a server-side, many-person client needs: tokens in the vault with their
absolute expiry, refreshed ahead of it, and where the browser goes and comes back (consent.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextvars import ContextVar
from typing import Any
from urllib.parse import urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.oauth2 import OAuthContext
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from opentelemetry.trace import INVALID_SPAN, Span, StatusCode
from pydantic import ValidationError

from jarvis.aggregator.downstream.auth.storage import VaultStorage
from jarvis.common import tracing
from jarvis.common.addresses import is_loopback

CLIENT_NAME = "Jarvis"
CLIENT_DOCUMENT_PATH = "/oauth/downstream/client.json"  # Jarvis's Client ID Metadata Document, under its public URL
CALLBACK_PATH = "/oauth/downstream/callback"
OFF = "off"
# The trace context of the request whose auth flow runs in this task (its headers'): a refresh's parent.
_caller_trace: ContextVar[dict[str, str]] = ContextVar("caller_trace", default={})  # noqa: B039 - never mutated


def client_id_url(configured: str, base_url: str, loopback: bool = False) -> str | None:
    """The URL Jarvis names itself by at an authorization server that takes Client ID Metadata Documents
    (`client_id_metadata_document_supported`), instead of registering: `configured` when set (`off`: none), else its
    own document under its configured public URL when that is https, or on loopback where tests allow it
    (`loopback`). Never from a request's Host: `base_url` is the configured one
    (docs/decisions/0067-discover-first-and-cimd.md)."""
    if configured:
        return None if configured == OFF else configured
    parts = urlsplit(base_url)
    if parts.scheme == "https" or (loopback and parts.scheme == "http" and _is_loopback(parts.hostname or "")):
        return base_url.rstrip("/") + CLIENT_DOCUMENT_PATH
    return None


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return is_loopback(ipaddress.ip_address(host))  # the one module that decides about addresses
    except ValueError:
        return False


def client_document(base_url: str) -> dict[str, Any]:
    """The Client ID Metadata Document at `<base_url>/oauth/downstream/client.json`: its URL is its client id."""
    base = base_url.rstrip("/")
    return {
        "client_id": base + CLIENT_DOCUMENT_PATH,
        "client_name": CLIENT_NAME,
        "redirect_uris": [base + CALLBACK_PATH],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }


class _AheadContext(OAuthContext):
    """An access token counts as expired `ahead` seconds early (at most half its life), so it is refreshed first;
    and a client Jarvis registers asks for the token endpoint authentication the server's metadata allows."""

    ahead: float = 60.0

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name == "oauth_metadata" and isinstance(value, OAuthMetadata):
            self.client_metadata.token_endpoint_auth_method = auth_method_for(value)

    def update_token_expiry(self, token: OAuthToken) -> None:
        if token.expires_in is None:
            self.token_expiry_time = None
            return
        life = float(token.expires_in)
        self.token_expiry_time = time.time() + life - min(self.ahead, life / 2)


def auth_method_for(metadata: OAuthMetadata) -> Any:
    """`none` (a public client, PKCE only) where allowed; else `client_secret_basic` (RFC 8414's default when the
    server lists nothing), else `client_secret_post`."""
    supported = metadata.token_endpoint_auth_methods_supported
    if supported is None:
        return "client_secret_basic"
    for method in ("none", "client_secret_basic", "client_secret_post"):
        if method in supported:
            return method
    return "none"


def client_metadata(redirect_uri: str, auth_method: str = "none") -> OAuthClientMetadata:
    return OAuthClientMetadata.model_validate(
        {
            "redirect_uris": [redirect_uri],
            "client_name": CLIENT_NAME,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": auth_method,
            "application_type": "web",
        }
    )


class PersonalOAuth(OAuthClientProvider):
    """OAuthClientProvider for (person, server) with its tokens in the vault."""

    def __init__(
        self,
        server_url: str,
        storage: VaultStorage,
        redirect_uri: str,
        *,
        redirect_handler: Callable[[str], Awaitable[None]],
        callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]],
        client_metadata_url: str | None = None,
        refresh_ahead: float = 60.0,
    ) -> None:
        https = client_metadata_url is not None and client_metadata_url.startswith("https://")
        super().__init__(
            server_url,
            client_metadata(redirect_uri),
            storage,
            redirect_handler=redirect_handler,
            callback_handler=callback_handler,
            client_metadata_url=client_metadata_url if https else None,  # the SDK takes https ones only
        )
        fields = {f.name: getattr(self.context, f.name) for f in dataclasses.fields(self.context)}
        fields["client_metadata_url"] = client_metadata_url  # a loopback one too, where tests allow it
        context = _AheadContext(**fields)
        context.ahead = refresh_ahead
        self.context = context
        self.storage = storage
        self._refreshing: Span = INVALID_SPAN  # a token refresh under way (one at a time: the SDK holds a lock)

    async def _initialize(self) -> None:
        # The SDK loads stored tokens without their expiry or the metadata they came with; the vault keeps both, so a
        # restarted Jarvis refreshes ahead of expiry, at the authorization server's own token endpoint.
        await super()._initialize()
        if self.context.current_tokens is not None and self.context.current_tokens.expires_in is not None:
            self.context.update_token_expiry(self.context.current_tokens)
        metadata = await self.storage.get_metadata()
        with contextlib.suppress(ValidationError):
            if isinstance(metadata.get("resource"), dict) and self.context.protected_resource_metadata is None:
                prm = ProtectedResourceMetadata.model_validate(metadata["resource"])
                self.context.protected_resource_metadata = prm
                if prm.authorization_servers:
                    self.context.auth_server_url = str(prm.authorization_servers[0])
            if isinstance(metadata.get("server"), dict) and self.context.oauth_metadata is None:
                self.context.oauth_metadata = OAuthMetadata.model_validate(metadata["server"])

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK's flow, remembering (for this request's task) the trace its headers name: a refresh it needs is
        traced under the call that needed it."""
        _caller_trace.set({name: request.headers[name] for name in tracing.FIELDS if name in request.headers})
        flow = super()._auth_flow(request)
        try:
            outgoing = await anext(flow)
            while True:
                outgoing = await flow.asend((yield outgoing))
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()  # at once: a flow left suspended would hold the SDK's lock until collected

    async def _refresh_token(self) -> httpx2.Request:
        request = await super()._refresh_token()
        self._refreshing.end()  # one a flow gave up on (its request failed) ends when the next begins
        attributes = {"server.address": request.url.host}  # the authorization server's host; no token, no URL
        self._refreshing = tracing.started("oauth refresh", _caller_trace.get(), attributes=attributes)
        tracing.inject(request.headers, self._refreshing)  # the authorization server's own spans join the trace
        return request

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        refreshed = await super()._handle_refresh_response(response)
        self._refreshing.set_attribute("http.response.status_code", response.status_code)
        if not refreshed:  # a full consent is asked for next
            self._refreshing.set_status(StatusCode.ERROR, "refresh refused")
        self._refreshing.end()
        self._refreshing = INVALID_SPAN
        return refreshed

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        await super()._handle_token_response(response)
        await self._keep_metadata()

    async def _keep_metadata(self) -> None:
        kept: dict[str, Any] = {}
        if self.context.protected_resource_metadata is not None:
            kept["resource"] = self.context.protected_resource_metadata.model_dump(mode="json", exclude_none=True)
        if self.context.oauth_metadata is not None:
            kept["server"] = self.context.oauth_metadata.model_dump(mode="json", exclude_none=True)
        await self.storage.set_metadata(kept)
