"""The person's path: /oauth/authorize checks the client's request and sends the person to the team's provider;
/oauth/callback takes them back, records who they are and shows the consent page; /oauth/consent, posted from
that page, answers the client's redirect_uri with a one-time code (and `iss`, RFC 9207).

Refusals before the person has signed in are pages, never redirects: a client registers itself (RFC 7591) with any
redirect URI, so a request malformed on purpose must not make Jarvis's URL a bounce to it (RFC 9700 §4.11.2: the
authorization server authenticates the person before it redirects to a URI it does not trust). Once the person has
signed in, a refusal goes back to the client's redirect_uri, as OAuth 2.1 §4.1.2.1 says.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from jarvis.aggregator.oauth.server import pages
from jarvis.aggregator.oauth.server.browser import CALLBACK_PATH, PURPOSE, BrowserSignIn, identify
from jarvis.aggregator.oauth.server.deps import CODE_SECONDS, PENDING_SECONDS, PROTOCOL_SCOPES, Deps
from jarvis.aggregator.oauth.server.errors import NO_STORE, OAuthError, with_query
from jarvis.aggregator.oauth.server.people import narrowed, user_identity
from jarvis.aggregator.oauth.upstream import Identity, UpstreamError

CSRF_COOKIE = "jarvis_consent"
_CHALLENGE_LENGTHS = range(43, 129)  # RFC 7636: a base64url SHA-256 is 43 characters


def secret_key(secret: str) -> str:
    """Codes and refresh tokens are stored under their SHA-256: the database holds nothing a caller can present."""
    return hashlib.sha256(secret.encode()).hexdigest()


class Flow:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.browser = BrowserSignIn(deps)

    async def authorize(self, request: Request) -> Response:
        params = dict(request.query_params)
        try:
            client = await self.deps.clients.find(params.get("client_id", ""), request.client)
        except OAuthError as refused:  # a metadata document that could not be fetched or used
            return refused.answer(request.headers.get("accept", ""))
        if client is None:
            return OAuthError(
                "invalid_client", "unknown client_id: the client must register first (or name its metadata URL)"
            ).page()
        redirect_uri = params.get("redirect_uri", "")
        if not redirect_uri and len(client.redirect_uris) == 1:
            redirect_uri = client.redirect_uris[0]
        if redirect_uri not in client.redirect_uris:
            return OAuthError(
                "invalid_request", "redirect_uri is not one this client registered; nothing was sent back to it"
            ).page()
        issuer = await self.deps.issuer()
        try:
            pending = await self._pending(params, client.client_id, redirect_uri)
            verifier, nonce, key = secrets.token_urlsafe(48), secrets.token_urlsafe(24), secrets.token_urlsafe(32)
            pending.update(upstream_verifier=verifier, upstream_nonce=nonce)
            await self.deps.store.put("pending", key, pending, ttl=PENDING_SECONDS)
            target = await self.deps.upstream.authorization_url(f"{issuer}{CALLBACK_PATH}", key, nonce, verifier)
        except OAuthError as refused:
            return refused.page()
        except UpstreamError as exc:
            return OAuthError("temporarily_unavailable", str(exc), 503).page()
        return RedirectResponse(target, status_code=303, headers=NO_STORE)

    async def _pending(self, params: dict[str, str], client_id: str, redirect_uri: str) -> dict[str, Any]:
        if params.get("response_type") != "code":
            raise OAuthError("unsupported_response_type", "response_type must be 'code' (authorization code flow)")
        challenge, method = params.get("code_challenge", ""), params.get("code_challenge_method", "")
        if not challenge:
            raise OAuthError("invalid_request", "PKCE is required: send code_challenge with code_challenge_method=S256")
        if method != "S256":
            raise OAuthError("invalid_request", "code_challenge_method must be S256; 'plain' and none are refused")
        if len(challenge) not in _CHALLENGE_LENGTHS:
            raise OAuthError("invalid_request", "code_challenge must be the base64url SHA-256 of the code_verifier")
        resource = await self.deps.check_resource(params.get("resource", ""))
        asked = [s for s in params.get("scope", "").split() if s not in PROTOCOL_SCOPES]
        return {
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "state": params.get("state", ""),
            "code_challenge": challenge,
            "resource": resource,
            "scopes": asked,
        }

    async def callback(self, request: Request) -> Response:
        params = dict(request.query_params)
        key = params.get("state", "")
        if not key:
            return OAuthError(
                "invalid_request", "the provider's answer has no state; start again from your client"
            ).page()
        taken = await self.deps.store.take("pending", key)
        if taken is None or not taken[1]:
            return OAuthError(
                "invalid_request", "this sign-in is unknown, expired or already used; start again from your client"
            ).page()
        pending = taken[0].body
        if PURPOSE in pending:  # a browser proving who it is for one of Jarvis's own pages, not a client's sign-in
            return await self.browser.finish(pending, params, request.cookies)
        issuer = await self.deps.issuer()
        back = pending["redirect_uri"], pending["state"], issuer
        try:
            identity = await identify(self.deps, pending, params)
        except OAuthError as refused:
            return refused.redirect(*back)
        granted = narrowed(await self.deps.people.scopes_for(identity), pending["scopes"])
        consent, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        client = await self.deps.clients.find(pending["client_id"])
        name = (client.client_name if client else "") or pending["client_id"]
        await self.deps.store.put(
            "consent",
            consent,
            {**pending, "subject": identity.subject, "granted": list(granted), "csrf": csrf, "client_name": name},
            ttl=PENDING_SECONDS,
        )
        page = pages.consent(name, pending["client_id"], identity, granted, pending["resource"], consent, csrf)
        secure = issuer.startswith("https://")
        page.set_cookie(
            CSRF_COOKIE, csrf, max_age=PENDING_SECONDS, path="/oauth", httponly=True, samesite="lax", secure=secure
        )
        return page

    async def consent(self, request: Request) -> Response:
        form = await request.form()
        consent, csrf = str(form.get("consent", "")), str(form.get("csrf", ""))
        cookie = request.cookies.get(CSRF_COOKIE, "")
        if not consent or not csrf or not hmac.compare_digest(csrf, cookie):
            return OAuthError(
                "invalid_request", "the consent form's CSRF token is missing or wrong; start again"
            ).page()
        taken = await self.deps.store.take("consent", consent)
        if taken is None or not taken[1] or not hmac.compare_digest(str(taken[0].body["csrf"]), csrf):
            return OAuthError("invalid_request", "this consent is unknown, expired or already answered").page()
        record = taken[0].body
        back = record["redirect_uri"], record["state"], await self.deps.issuer()
        # Checked before the decision: with nothing granted the page offers only "Back to the client", and the client
        # must hear why, not that the person declined.
        if not record["granted"]:
            return OAuthError("access_denied", await self._no_role(record)).redirect(*back)
        if form.get("decision") != "allow":
            return OAuthError("access_denied", "you declined the client's access").redirect(*back)
        code = secrets.token_urlsafe(32)
        grant = {k: record[k] for k in ("client_id", "redirect_uri", "code_challenge", "resource", "granted")}
        user = await self.deps.people.user(record["subject"])
        if user is None:
            return OAuthError("access_denied", "your user record is gone; sign in again").redirect(*back)
        identity = user_identity(user)
        grant["user"] = {"subject": identity.subject, "email": identity.email, "name": identity.name}
        await self.deps.store.put("code", secret_key(code), grant, family=secrets.token_hex(16), ttl=CODE_SECONDS)
        answer = {"code": code, "iss": back[2]}
        if record["state"]:
            answer["state"] = record["state"]
        return RedirectResponse(with_query(record["redirect_uri"], answer), status_code=303, headers=NO_STORE)

    async def _no_role(self, record: dict[str, Any]) -> str:
        """The no-role page's sentence for the consent `record`'s person, as the client's error_description."""
        user = await self.deps.people.user(record["subject"])
        person = user_identity(user) if user is not None else Identity(str(record["subject"]), "", "", ())
        return pages.no_role_description(person, str(record["client_name"]))
