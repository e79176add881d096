"""How the authorization server refuses: an OAuth error body (RFC 6749 §5.2) with a reason that says what to do,
or, where no redirect back to the client is safe, a plain HTML page saying the same. Never a 500."""

from __future__ import annotations

import html
import logging
from urllib.parse import urlencode

from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
# Sign-in pages are never framed (a consent button under another site's overlay is clickjacking) and load nothing.
PAGE_HEADERS = {
    **NO_STORE,
    "X-Frame-Options": "DENY",
    # No form-action: browsers apply it to the redirect after the consent post, which goes to the client.
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
}
log = logging.getLogger(__name__)


class OAuthError(Exception):
    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(f"{error}: {description}")
        self.error = error
        self.description = description
        self.status = status

    def _told(self, how: str) -> None:
        # Every refusal leaves a trace; the description never holds a secret (codes and tokens are not quoted).
        log.info("oauth refusal %s (%s): %s", self.error, how, self.description)

    def json(self) -> Response:
        self._told("json")
        headers = dict(NO_STORE)
        if self.status == 401:
            headers["WWW-Authenticate"] = f'Basic realm="jarvis", error="{self.error}"'
        return JSONResponse(
            {"error": self.error, "error_description": self.description}, status_code=self.status, headers=headers
        )

    def page(self) -> Response:
        """For a refusal that must not redirect (unknown client, unregistered redirect_uri: no open redirect)."""
        self._told("page")
        return HTMLResponse(
            page(
                "Sign-in refused", f"<p><strong>{html.escape(self.error)}</strong>: {html.escape(self.description)}</p>"
            ),
            status_code=self.status,
            headers=PAGE_HEADERS,
        )

    def answer(self, accept: str) -> Response:
        """A page for a browser (a navigation's `Accept` always names text/html), the JSON body for any other caller
        (`*/*`, application/json): a person never faces raw JSON at /oauth/*, a program keeps it."""
        return self.page() if "text/html" in accept.lower() else self.json()

    def redirect(self, redirect_uri: str, state: str, issuer: str) -> Response:
        """Back to the client's registered redirect_uri with the error, `state` and `iss` (RFC 9207)."""
        self._told("redirect")
        params = {"error": self.error, "error_description": self.description, "iss": issuer}
        if state:
            params["state"] = state
        return RedirectResponse(with_query(redirect_uri, params), status_code=303, headers=NO_STORE)


def with_query(uri: str, params: dict[str, str]) -> str:
    return uri + ("&" if "?" in uri else "?") + urlencode(params)


def page(title: str, body: str) -> str:
    """A plain page: no script, no external resource (the sign-in pages work without JavaScript)."""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<meta name=viewport content='width=device-width'><title>{html.escape(title)} - Jarvis</title></head>"
        f"<body style='font-family:sans-serif;max-width:40em;margin:2em auto'><h1>{html.escape(title)}</h1>"
        f"{body}</body></html>"
    )
