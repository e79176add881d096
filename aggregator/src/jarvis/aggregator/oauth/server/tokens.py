"""/oauth/token (authorization_code with PKCE, refresh_token with rotation) and /oauth/revoke (RFC 7009).

A code is redeemed once: a second redemption revokes every refresh token the first led to. A refresh token is
used once: using one again (a thief's copy or the client's) revokes its whole family, so both must sign in anew.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Any

from authlib.oauth2.rfc7636 import create_s256_code_challenge  # type: ignore[import-untyped]
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from jarvis.aggregator.gateways.oauth_state import Stored
from jarvis.aggregator.oauth.server.clients import Client
from jarvis.aggregator.oauth.server.deps import PROTOCOL_SCOPES, REFRESH_SECONDS, Deps
from jarvis.aggregator.oauth.server.errors import NO_STORE, OAuthError
from jarvis.aggregator.oauth.server.flow import secret_key
from jarvis.aggregator.oauth.server.people import narrowed, user_identity
from jarvis.common.scopes import covers

_MAX_FORM_FIELD = 4096


async def _form(request: Request) -> dict[str, str]:
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        raise OAuthError("invalid_request", "send the request as application/x-www-form-urlencoded")
    form = await request.form()
    values = {k: v for k, v in form.items() if isinstance(v, str)}
    if any(len(v) > _MAX_FORM_FIELD for v in values.values()):
        raise OAuthError("invalid_request", f"a parameter is longer than {_MAX_FORM_FIELD} characters")
    return values


def _check_refresh(grant: dict[str, Any], asked: list[str], resource: str) -> None:
    """A refresh may name the resource authorized, and scopes inside those granted (RFC 6749 §6), no others."""
    if resource and resource != grant["resource"]:
        raise OAuthError("invalid_target", "resource differs from the one the person authorized")
    if any(not any(covers(g, s) for g in grant["granted"]) for s in asked):
        raise OAuthError("invalid_scope", "a refreshed token may only narrow the scopes granted at sign-in")


class Tokens:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    async def token(self, request: Request) -> Response:
        try:
            form = await _form(request)
            client = await self.deps.clients.authenticate(
                form, request.headers.get("authorization", ""), request.client
            )
            grant_type = form.get("grant_type", "")
            if grant_type == "authorization_code":
                grant, family = await self._redeem_code(form, client)
            elif grant_type == "refresh_token":
                grant, family = await self._rotate(form, client)
            else:
                raise OAuthError("unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
            return await self._issue(grant, family)
        except OAuthError as refused:
            return refused.json()

    async def _take_once(self, kind: str, secret: str, client: Client, what: str) -> Stored:
        """The code or refresh token, used up; a second use, or a use by another client, revokes its whole grant."""
        taken = await self.deps.store.take(kind, secret_key(secret))
        if taken is None:
            raise OAuthError("invalid_grant", f"{what} is unknown, expired or revoked; sign in again")
        stored, first = taken
        if not first:
            await self.deps.store.revoke_family(stored.family)
            raise OAuthError("invalid_grant", f"{what} was already used; the tokens issued with it are revoked")
        if stored.body["client_id"] != client.client_id:
            await self.deps.store.revoke_family(stored.family)
            raise OAuthError("invalid_grant", f"{what} was issued to another client")
        return stored

    async def _redeem_code(self, form: dict[str, str], client: Client) -> tuple[dict[str, Any], str]:
        code, verifier = form.get("code", ""), form.get("code_verifier", "")
        if not code or not verifier:
            raise OAuthError("invalid_request", "send code and code_verifier (PKCE) to redeem an authorization code")
        stored = await self._take_once("code", code, client, "the authorization code")
        grant = stored.body
        if form.get("redirect_uri", grant["redirect_uri"]) != grant["redirect_uri"]:
            raise OAuthError("invalid_grant", "redirect_uri differs from the one of the authorization request")
        if not hmac.compare_digest(create_s256_code_challenge(verifier), grant["code_challenge"]):
            raise OAuthError("invalid_grant", "code_verifier does not match the code_challenge (PKCE S256)")
        if form.get("resource") and await self.deps.check_resource(form["resource"]) != grant["resource"]:
            raise OAuthError("invalid_target", "resource differs from the one the person authorized")
        return grant, stored.family

    async def _rotate(self, form: dict[str, str], client: Client) -> tuple[dict[str, Any], str]:
        token = form.get("refresh_token", "")
        if not token:
            raise OAuthError("invalid_request", "send refresh_token")
        asked = [s for s in form.get("scope", "").split() if s not in PROTOCOL_SCOPES]
        # A refused request leaves the refresh token usable: it is looked at before it is taken. The token is checked
        # before the resource: a made-up one learns nothing of what resources are.
        peeked = await self.deps.store.get("refresh", secret_key(token))
        if peeked is not None and peeked.body.get("client_id") == client.client_id:
            _check_refresh(peeked.body, asked, await self._resource(form))
        stored = await self._take_once("refresh", token, client, "the refresh token (it rotates at each use)")
        grant = dict(stored.body)
        _check_refresh(grant, asked, await self._resource(form))
        if asked:
            grant["granted"] = list(narrowed(grant["granted"], asked))
        return grant, stored.family

    async def _resource(self, form: dict[str, str]) -> str:
        return await self.deps.check_resource(form["resource"]) if form.get("resource") else ""

    async def _issue(self, grant: dict[str, Any], family: str) -> Response:
        user = await self.deps.people.user(grant["user"]["subject"])
        if user is None or user.get("disabled"):
            await self.deps.store.revoke_family(family)
            raise OAuthError("invalid_grant", "this account is disabled or unknown; ask an admin")
        identity = user_identity(user)
        # Roles may have changed since sign-in: the token carries what they grant now, within what was granted.
        scopes = narrowed(await self.deps.people.scopes_for(identity), grant["granted"])
        if not scopes:
            raise OAuthError("invalid_scope", "no Jarvis role grants this account any scope now; ask an admin")
        access = self.deps.mint(
            issuer=await self.deps.issuer(),
            subject=identity.subject,
            audience=grant["resource"],
            scopes=scopes,
            client_id=grant["client_id"],
            email=identity.email,
            name=identity.name,
            groups=identity.groups,
        )
        refresh = secrets.token_urlsafe(32)
        kept = {k: grant[k] for k in ("client_id", "resource", "granted", "user")}
        await self.deps.store.put("refresh", secret_key(refresh), kept, family=family, ttl=REFRESH_SECONDS)
        body = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.deps.access_ttl,
            "refresh_token": refresh,
            "scope": " ".join(scopes),
        }
        return JSONResponse(body, headers=NO_STORE)

    async def revoke(self, request: Request) -> Response:
        """RFC 7009: 200 whether or not the token was known; a refresh token's whole family goes."""
        try:
            form = await _form(request)
            client = await self.deps.clients.authenticate(
                form, request.headers.get("authorization", ""), request.client
            )
        except OAuthError as refused:
            return refused.json()
        token = form.get("token", "")
        if not token:
            return OAuthError("invalid_request", "send token, the refresh token to revoke").json()
        stored = await self.deps.store.get("refresh", secret_key(token))
        if stored is not None and stored.body.get("client_id") == client.client_id:
            await self.deps.store.revoke_family(stored.family)
        return Response(status_code=200, headers=NO_STORE)
