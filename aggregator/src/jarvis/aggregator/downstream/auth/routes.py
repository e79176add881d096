"""The browser's side of a person's consent: the link Jarvis hands out, the authorization server's return, and the
Client ID Metadata Document Jarvis identifies itself with (where its public URL is https)."""

from __future__ import annotations

import html

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from jarvis.aggregator.downstream.auth.consent import (
    CALLBACK_PATH,
    COOKIE,
    START_PATH,
    ConsentFailed,
    Consents,
    Flow,
    cookie_name,
)
from jarvis.aggregator.downstream.auth.provider import CLIENT_NAME
from jarvis.aggregator.downstream.auth.relay import ConsentRelay, Opened, Returned

CLIENT_DOCUMENT_PATH = "/oauth/downstream/client.json"
_NO_STORE = {"cache-control": "no-store", "referrer-policy": "no-referrer"}


def _page(title: str, text: str, status: int = 200) -> HTMLResponse:
    body = (
        f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>"
    )
    return HTMLResponse(body, status_code=status, headers=_NO_STORE)


class ConsentRoutes:
    """`relay`: where Jarvis has Redis, the other workers and replicas, asked for a consent this process lacks."""

    def __init__(self, consents: Consents | None, relay: ConsentRelay | None = None) -> None:
        self.consents = consents
        self.relay = relay

    def routes(self) -> list[Route]:
        return [
            Route(START_PATH, self.start),
            Route(CALLBACK_PATH, self.callback),
            Route(CLIENT_DOCUMENT_PATH, self.client_document),
        ]

    async def start(self, request: Request) -> Response:
        if self.consents is None:
            return _page("Not available", "This Jarvis keeps no per-person authorizations.", 404)
        flow_id = request.query_params.get("flow", "")
        try:
            if self.relay is not None and not self.consents.holds(flow_id):
                opened = await self.relay.open(flow_id)
            else:
                flow, target = self.consents.open(flow_id)
                opened = Opened(target, cookie_name(flow.id), flow.nonce)
        except ConsentFailed as exc:
            return _page("Link not usable", str(exc), 400)
        response = RedirectResponse(opened.target, status_code=302, headers=_NO_STORE)
        secure = request.url.scheme == "https"
        response.set_cookie(
            opened.cookie,
            opened.nonce,
            max_age=900,
            path="/oauth/downstream",
            httponly=True,
            secure=secure,
            samesite="lax",
        )
        return response

    async def callback(self, request: Request) -> Response:
        if self.consents is None:
            return _page("Not available", "This Jarvis keeps no per-person authorizations.", 404)
        query = request.query_params
        state = query.get("state", "")
        flow = self.consents.flow_for_state(state)
        answer = (query.get("code", ""), query.get("error", ""), query.get("iss"), query.get("error_description", ""))
        try:
            if flow is None and self.relay is not None:
                cookies = {k: v for k, v in request.cookies.items() if k.startswith(COOKIE)}
                done: Flow | Returned = await self.relay.returned(state, cookies, *answer)
            else:
                cookie = request.cookies.get(cookie_name(flow.id), "") if flow is not None else ""
                done = await self.consents.returned(state, cookie, *answer)
        except ConsentFailed as exc:
            return _page("Authorization not accepted", str(exc), 400)
        if done.error:
            return _page("Not connected", done.error, 400)
        if not done.connected:
            return _page("Still connecting", "Jarvis is finishing the authorization; call again in a moment.", 202)
        return _page(
            "Connected",
            f"Jarvis is connected to '{done.server}' with your account. Go back to your assistant and call again.",
        )

    async def client_document(self, request: Request) -> Response:
        """The Client ID Metadata Document: its URL is the client id (served only at an https public URL)."""
        base = f"{request.url.scheme}://{request.url.netloc}"
        return JSONResponse(
            {
                "client_id": base + CLIENT_DOCUMENT_PATH,
                "client_name": CLIENT_NAME,
                "redirect_uris": [base + CALLBACK_PATH],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
            }
        )
