"""Who holds a browser, proven by a sign-in at the team's provider: for Jarvis's own pages that must know the person
(a consent link someone may have forwarded, decision 0062), not for an MCP client's sign-in (flow.py).

`start(purpose, payload)` gives the provider URL to send the browser to, and a cookie binding the sign-in to that
browser: a return opened in another browser (a person handed someone else's finished sign-in, login CSRF) fails.
The provider returns to the same `/oauth/callback` an MCP client's sign-in uses (the one redirect URI registered
there), and flow.py hands a return whose pending record names a purpose to `finish`, which checks the cookie,
exchanges the code, checks the person's standing and gives the identity to the purpose's handler. Every refusal is
a page: there is no client to redirect to.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.responses import Response

from jarvis.aggregator.oauth.server.deps import PENDING_SECONDS, Deps
from jarvis.aggregator.oauth.server.errors import OAuthError
from jarvis.aggregator.oauth.upstream import Identity, UpstreamError

PURPOSE = "purpose"  # the pending record's key naming whose return it is; an MCP client's sign-in has none
CALLBACK_PATH = "/oauth/callback"

COOKIE = "jarvis_signin"

Handler = Callable[[Identity, dict[str, Any]], Awaitable[Response]]


@dataclass(frozen=True)
class Started:
    """Where to send the browser, and the cookie to set on it first (path /oauth, HttpOnly, SameSite=Lax)."""

    url: str
    cookie: str
    value: str

    def set_on(self, response: Response, secure: bool) -> Response:
        response.set_cookie(
            self.cookie,
            self.value,
            max_age=PENDING_SECONDS,
            path="/oauth",
            httponly=True,
            samesite="lax",
            secure=secure,
        )
        return response


def cookie_name(state: str) -> str:
    """A cookie per sign-in, so a browser may run several at once."""
    return f"{COOKIE}_{state[:12]}"


class BrowserSignIn:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.handlers: dict[str, Handler] = {}  # by purpose, registered by the pages that need a person

    async def start(self, purpose: str, payload: dict[str, Any]) -> Started:
        """The provider URL that signs the browser in and comes back to `purpose`'s handler with `payload`."""
        issuer = await self.deps.issuer()
        verifier, nonce, key = secrets.token_urlsafe(48), secrets.token_urlsafe(24), secrets.token_urlsafe(32)
        browser = secrets.token_urlsafe(24)
        pending = {
            PURPOSE: purpose,
            "payload": payload,
            "browser": browser,
            "upstream_verifier": verifier,
            "upstream_nonce": nonce,
        }
        await self.deps.store.put("pending", key, pending, ttl=PENDING_SECONDS)
        url = await self.deps.upstream.authorization_url(f"{issuer}{CALLBACK_PATH}", key, nonce, verifier)
        return Started(url, cookie_name(key), browser)

    async def finish(self, pending: dict[str, Any], params: dict[str, str], cookies: Mapping[str, str]) -> Response:
        """The provider's return for a pending record `start` made: the purpose's page for the person, or a refusal."""
        handler = self.handlers.get(str(pending.get(PURPOSE)))
        if handler is None:
            return OAuthError("invalid_request", "this sign-in's page is not served here; start again").page()
        cookie = cookies.get(cookie_name(params.get("state", "")), "")
        if not hmac.compare_digest(cookie, str(pending.get("browser", ""))) or not cookie:
            return OAuthError(
                "access_denied",
                "this sign-in was started in another browser; open the link you were given in your own browser",
            ).page()
        try:
            identity = await identify(self.deps, pending, params)
        except OAuthError as refused:
            return refused.page()
        return await handler(identity, dict(pending.get("payload") or {}))


async def identify(deps: Deps, pending: dict[str, Any], params: dict[str, str]) -> Identity:
    """The person the provider's return (`params`, for the `pending` sign-in) names, recorded as signed in;
    OAuthError access_denied when the answer is not one to accept or the person is disabled."""
    upstream = deps.upstream.config.issuer
    if "iss" in params and params["iss"].rstrip("/") != upstream.rstrip("/"):
        # RFC 9207 upstream: an answer from another provider than the one asked is a mix-up attack.
        raise OAuthError("access_denied", "the sign-in answer came from another identity provider")
    if "error" in params or not params.get("code"):
        raise OAuthError(
            "access_denied", f"the identity provider did not sign you in ({params.get('error', 'no code')})"
        )
    issuer = await deps.issuer()
    try:
        identity = await deps.upstream.exchange(
            f"{issuer}{CALLBACK_PATH}", params["code"], pending["upstream_verifier"], pending["upstream_nonce"]
        )
    except UpstreamError as exc:
        raise OAuthError("access_denied", str(exc)) from None
    user = await deps.people.signed_in(identity)
    if user["disabled"]:
        raise OAuthError("access_denied", "your Jarvis account is disabled; ask an admin")
    return identity
