"""OAuth clients: registered dynamically (RFC 7591), pre-registered by an admin (the same record, put by the CLI),
or named by an https URL whose Client ID Metadata Document describes them (cimd.py). Such a document may also be
registered ahead by an admin (issue 48 item 3: a network that cannot reach it): kept under its URL, it is used
without a fetch, or, where the record allows, in place of a fetch that fails.

Registration decides the redirect URIs an authorization may name, compared exactly: the guard against open
redirects and code theft. Clients are public by default (PKCE is their proof); one registered with
`client_secret_post` or `client_secret_basic` gets a secret, of which only the SHA-256 is kept.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from starlette.datastructures import Address

from jarvis.aggregator.gateways.oauth_state import OAuthStateGateway
from jarvis.aggregator.oauth.server.errors import OAuthError
from jarvis.aggregator.settings import is_loopback

AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic")
_MAX_URIS = 10
MAX_CLIENT_ID = 300  # longer ids are unknown, never looked up or fetched
log = logging.getLogger(__name__)
AHEAD = "registered ahead"  # the source of a metadata document an admin gave (no source: registered)


@dataclass(frozen=True)
class Client:
    client_id: str
    client_name: str
    redirect_uris: tuple[str, ...]
    auth_method: str = "none"
    secret_hash: str = ""

    def record(self) -> dict[str, Any]:
        return {
            "client_id": self.client_id,
            "client_name": self.client_name,
            "redirect_uris": list(self.redirect_uris),
            "token_endpoint_auth_method": self.auth_method,
            "secret_hash": self.secret_hash,
        }


def client_from(body: dict[str, Any]) -> Client:
    return Client(
        str(body["client_id"]),
        str(body.get("client_name", "")),
        tuple(body.get("redirect_uris", ())),
        str(body.get("token_endpoint_auth_method", "none")),
        str(body.get("secret_hash", "")),
    )


def hashed(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def check_redirect_uri(uri: str, error: str = "invalid_redirect_uri") -> str:
    """An https URI, or http on a loopback host (a native client's listener), without a fragment."""
    if not isinstance(uri, str) or len(uri) > 2000:
        raise OAuthError(error, "each redirect_uri is a string of at most 2000 characters")
    parts = urlsplit(uri)
    if parts.fragment or not parts.netloc:
        raise OAuthError(error, f"redirect_uri {uri!r} must be an absolute URL without a fragment")
    if parts.scheme == "https" or (parts.scheme == "http" and is_loopback(parts.hostname or "")):
        return uri
    raise OAuthError(error, f"redirect_uri {uri!r} must use https, or http on a loopback address (127.0.0.1)")


def metadata_client(client_id: str, body: dict[str, Any], error: str) -> Client:
    """The client `body` (registration request or metadata document) describes, checked; `error` names refusals."""
    uris = body.get("redirect_uris")
    if not isinstance(uris, list) or not uris or len(uris) > _MAX_URIS:
        raise OAuthError(error, f"redirect_uris is required: a list of 1-{_MAX_URIS} URIs the client listens on")
    checked = tuple(check_redirect_uri(u, "invalid_redirect_uri") for u in uris)
    method = body.get("token_endpoint_auth_method", "none")
    if method not in AUTH_METHODS:
        raise OAuthError(error, f"token_endpoint_auth_method must be one of {', '.join(AUTH_METHODS)}")
    for field, allowed in (("grant_types", {"authorization_code", "refresh_token"}), ("response_types", {"code"})):
        asked = body.get(field, [])
        if not isinstance(asked, list) or not set(asked) <= allowed:
            raise OAuthError(error, f"{field} may hold only {', '.join(sorted(allowed))}")
    name = body.get("client_name", "")
    if not isinstance(name, str) or len(name) > 200:
        raise OAuthError(error, "client_name is a string of at most 200 characters")
    return Client(client_id, name, checked, method)


def shown(body: dict[str, Any]) -> dict[str, Any]:
    """A stored client as an admin sees it: never its secret's hash; a metadata document registered ahead says so,
    and whether Jarvis may fetch it (other records keep the shape they always had)."""
    record = {k: v for k, v in client_from(body).record().items() if k != "secret_hash"}
    if body.get("source") == AHEAD:
        record.update(source=AHEAD, refetch=bool(body.get("refetch")))
    return record


class Clients:
    def __init__(self, store: OAuthStateGateway, cimd: Any = None) -> None:
        self.store = store
        self.cimd = cimd  # fetches Client ID Metadata Documents; None: https client ids are unknown

    async def register(self, body: dict[str, Any]) -> dict[str, Any]:
        """RFC 7591: the client's registration answer (with its secret, shown once, for a confidential one)."""
        if not isinstance(body, dict):
            raise OAuthError("invalid_client_metadata", "send the client's metadata as a JSON object")
        client = metadata_client("jc_" + secrets.token_urlsafe(16), body, "invalid_client_metadata")
        secret = ""
        if client.auth_method != "none":
            secret = "jcs_" + secrets.token_urlsafe(32)
            client = Client(
                client.client_id, client.client_name, client.redirect_uris, client.auth_method, hashed(secret)
            )
        await self.store.put("client", client.client_id, client.record())
        answer = {k: v for k, v in client.record().items() if k != "secret_hash"}
        answer.update(
            client_id_issued_at=int(time.time()),
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        )
        if secret:
            answer.update(client_secret=secret, client_secret_expires_at=0)
        return answer

    async def register_ahead(self, client: Client, refetch: bool) -> dict[str, Any]:
        """Keep a metadata document's client (checked by cimd.described_client) under its URL; as `shown`."""
        body = {**client.record(), "source": AHEAD, "refetch": refetch}
        await self.store.put("client", client.client_id, body)
        return shown(body)

    async def find(self, client_id: str, caller: Address | None = None) -> Client | None:
        """The client, or None if unknown. `caller`: the client address of an authorize request, whose metadata
        document fetches are limited (cimd.py)."""
        if not client_id or len(client_id) > MAX_CLIENT_ID:
            return None
        is_url = client_id.startswith("https://") or (client_id.startswith("http://") and self.cimd is not None)
        stored = await self.store.get("client", client_id)
        if not is_url:
            return client_from(stored.body) if stored is not None else None
        if stored is None or (stored.body.get("refetch") and self.cimd is not None):
            return await self._fetched(client_id, caller, stored.body if stored is not None else None)
        return client_from(stored.body)  # registered ahead: the admin's copy, no fetch

    async def _fetched(self, url: str, caller: Address | None, ahead: dict[str, Any] | None) -> Client | None:
        """The document at `url` as fetched; where that fails, the copy registered ahead (`ahead`), if any."""
        if self.cimd is None:
            return None
        try:
            client: Client = await self.cimd.fetch(url, caller)
        except OAuthError as refused:
            if ahead is None:
                raise
            log.info("client %s: using the metadata registered ahead (%s)", url, refused.description)
            return client_from(ahead)
        return client

    async def authenticate(self, form: dict[str, str], authorization: str, caller: Address | None = None) -> Client:
        """The client a token or revocation request comes from, its secret checked where it has one. `caller`: the
        request's client address, whose metadata document fetches are limited as an authorize request's are."""
        client_id, secret = form.get("client_id", ""), form.get("client_secret", "")
        kind, _, credentials = authorization.partition(" ")
        if kind.lower() == "basic" and credentials:
            try:
                user, _, password = base64.b64decode(credentials).decode().partition(":")
            except ValueError:
                raise OAuthError("invalid_client", "malformed Basic credentials", 401) from None
            client_id, secret = unquote(user), unquote(password)
        client = await self.find(client_id, caller)
        if client is None:
            raise OAuthError("invalid_client", "unknown client_id: register the client first (/oauth/register)", 401)
        if client.secret_hash and not (secret and hmac.compare_digest(hashed(secret), client.secret_hash)):
            raise OAuthError("invalid_client", "this client must authenticate with its client_secret", 401)
        return client
