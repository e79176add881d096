"""Jarvis as a client of the team's OpenID provider: discovery, the authorization redirect (code + PKCE + state +
nonce), the code exchange, the ID token's validation (joserfc, through Authlib's stack; no hand-made JWT code) and
the userinfo call.

The person signs in there; what Jarvis keeps of it is an Identity (subject, email, name, groups). OpenID Connect
puts the claims a scope asks for (email, name, groups) in the userinfo response, and an ID token carries them only
when the provider is configured to (oidc-provider's `conformIdTokenClaims: false`, a Keycloak mapper): so Jarvis
reads both, at each sign-in.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx2
from authlib.oauth2.rfc7636 import create_s256_code_challenge  # type: ignore[import-untyped]
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

# The provider's metadata and keys change rarely; a rotated key unknown to the cache is fetched again at once.
_CACHE_SECONDS = 300.0
_TIMEOUT = httpx2.Timeout(10.0)
SCOPES = "openid email profile groups"
GROUPS_CLAIM = "groups"


def _json_object(response: httpx2.Response) -> dict[str, Any] | None:
    """The answer's JSON object, or None for anything else (a proxy's HTML error page, truncated JSON)."""
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


class UpstreamError(Exception):
    """The provider refused or answered something Jarvis cannot accept; the message says which, without secrets."""


@dataclass(frozen=True)
class Identity:
    subject: str
    email: str
    name: str
    groups: tuple[str, ...]
    # Where groups were looked for and the names of the claims that did arrive (never their values): enough to say
    # in a log why a group role did not match. Empty for an identity read back from a user record.
    groups_claim: str = ""
    arrived: tuple[str, ...] = ()


@dataclass(frozen=True)
class UpstreamConfig:
    issuer: str
    client_id: str
    client_secret: str
    # What Jarvis asks the provider for (JARVIS_OIDC_SCOPES): Google and Entra ID refuse a `groups` scope they do not
    # know, so there it is left out (Entra ID sends groups when the app's token configuration says so).
    scopes: str = SCOPES
    # Where the person's groups are (JARVIS_OIDC_GROUPS_CLAIM): a claim name, or a dotted path into nested claims
    # (Keycloak's `realm_access.roles`); see `claim_at`.
    groups_claim: str = GROUPS_CLAIM


class Upstream:
    def __init__(self, config: UpstreamConfig) -> None:
        self.config = config
        self._metadata: dict[str, Any] | None = None
        self._keys: KeySet | None = None
        self._fetched = 0.0

    async def _get_json(self, url: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
        try:
            async with httpx2.AsyncClient(timeout=_TIMEOUT) as client:
                response = await client.get(url, headers=headers)
        except httpx2.HTTPError as exc:
            raise UpstreamError(
                f"the identity provider at {self.config.issuer} did not answer ({type(exc).__name__})"
            ) from None
        if response.status_code != 200:
            raise UpstreamError(f"the identity provider answered {response.status_code} for {url}")
        body = _json_object(response)
        if body is None:
            raise UpstreamError(f"the identity provider's {url} is not a JSON object")
        return body

    async def metadata(self) -> dict[str, Any]:
        if self._metadata is None or time.monotonic() - self._fetched > _CACHE_SECONDS:
            url = self.config.issuer.rstrip("/") + "/.well-known/openid-configuration"
            found = await self._get_json(url)
            # A provider naming another issuer is a mix-up waiting to happen (RFC 9207's concern, upstream).
            if found.get("issuer", "").rstrip("/") != self.config.issuer.rstrip("/"):
                raise UpstreamError(
                    f"the provider's discovery names issuer {found.get('issuer')!r}, not {self.config.issuer!r}: "
                    "set JARVIS_OIDC_ISSUER to the issuer exactly as the provider spells it"
                )
            self._metadata, self._keys, self._fetched = found, None, time.monotonic()
        return self._metadata

    async def authorization_url(self, redirect_uri: str, state: str, nonce: str, code_verifier: str) -> str:
        """Where to send the person; `redirect_uri` is <public URL>/oauth/callback, registered at the provider."""
        meta = await self.metadata()
        params = {
            "response_type": "code",
            "client_id": self.config.client_id,
            "redirect_uri": redirect_uri,
            "scope": self.config.scopes,
            "state": state,
            "nonce": nonce,
            "code_challenge": create_s256_code_challenge(code_verifier),
            "code_challenge_method": "S256",
        }
        return f"{meta['authorization_endpoint']}?{urlencode(params)}"

    async def _key_set(self, refresh: bool = False) -> KeySet:
        if self._keys is None or refresh:
            self._keys = KeySet.import_key_set(await self._get_json((await self.metadata())["jwks_uri"]))  # type: ignore[arg-type]
        return self._keys

    async def exchange(self, redirect_uri: str, code: str, code_verifier: str, nonce: str) -> Identity:
        """The signed-in person, from the provider's ID token for `code` and its userinfo answer; UpstreamError when
        anything is off."""
        meta = await self.metadata()
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": code_verifier,
        }
        auth = httpx2.BasicAuth(self.config.client_id, self.config.client_secret)
        try:
            async with httpx2.AsyncClient(timeout=_TIMEOUT) as client:
                response = await client.post(meta["token_endpoint"], data=form, auth=auth)
        except httpx2.HTTPError as exc:
            raise UpstreamError(
                f"the identity provider's token endpoint did not answer ({type(exc).__name__})"
            ) from None
        body = _json_object(response) or {}
        if response.status_code != 200 or "id_token" not in body:
            raise UpstreamError(
                f"the identity provider refused the sign-in code: {body.get('error', response.status_code)}"
            )
        claims = await self._id_token_claims(str(body["id_token"]), nonce)
        endpoint = meta.get("userinfo_endpoint")
        if endpoint:  # OpenID Connect recommends it; a provider without one has put everything in the ID token
            if not body.get("access_token"):
                raise UpstreamError("the identity provider's token answer has no access_token to ask userinfo with")
            userinfo = await self._get_json(str(endpoint), {"Authorization": f"Bearer {body['access_token']}"})
            # OpenID Connect Core §5.3.2: a userinfo answer for another subject than the ID token's must not be used;
            # it is a substituted answer, and the person it names is not the one who signed in.
            if str(userinfo.get("sub", "")) != str(claims["sub"]):
                raise UpstreamError(
                    "the identity provider's userinfo answer names another subject than its ID token; "
                    "the sign-in is refused"
                )
            claims = {**userinfo, **claims}  # the signed ID token's value wins where both carry a claim
        return identity_from(claims, self.config.groups_claim)

    async def _id_token_claims(self, id_token: str, nonce: str) -> dict[str, Any]:
        try:
            try:
                token = jwt.decode(id_token, await self._key_set())
            except JoseError:
                token = jwt.decode(id_token, await self._key_set(refresh=True))  # the provider rotated its keys
            jwt.JWTClaimsRegistry(
                iss={"essential": True, "value": self.config.issuer},
                aud={"essential": True, "value": self.config.client_id},
                sub={"essential": True},
                exp={"essential": True},
                nonce={"essential": True, "value": nonce},
            ).validate(token.claims)
        except (JoseError, ValueError) as exc:
            raise UpstreamError(
                f"the identity provider's ID token is not valid for this sign-in ({exc.__class__.__name__})"
            ) from None
        return dict(token.claims)


def claim_at(claims: Mapping[str, Any], path: str) -> Any:
    """The claim `path` names, None when absent: a claim of that very name first (Auth0's namespaced
    `https://example.com/groups` holds dots), else a dotted path through nested objects (Keycloak's
    `realm_access.roles`, `resource_access.<client>.roles`), where a key may itself hold dots (a client id)."""
    if path in claims:
        return claims[path]
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):  # the longest key first
        inner = claims.get(".".join(parts[:cut]))
        if isinstance(inner, Mapping):
            found = claim_at(inner, ".".join(parts[cut:]))
            if found is not None:
                return found
    return None


def _groups(value: Any) -> tuple[str, ...]:
    """A list of group names, or a single one as a string (Entra ID and Okta send lists; some mappers a string)."""
    if isinstance(value, str):
        return (value,) if value else ()
    if isinstance(value, list):
        return tuple(g for g in value if isinstance(g, str) and g)
    return ()


def identity_from(claims: Mapping[str, Any], groups_claim: str) -> Identity:
    """The person the provider's claims (ID token and userinfo merged) describe, groups read at `groups_claim`."""
    return Identity(
        subject=str(claims["sub"]),
        email=str(claims.get("email", "")),
        name=str(claims.get("name", "")),
        groups=_groups(claim_at(claims, groups_claim)),
        groups_claim=groups_claim,
        arrived=tuple(sorted(claims)),
    )
