"""The browser's side of a person's consent: the link Jarvis hands out, the authorization server's return, and the
Client ID Metadata Document Jarvis identifies itself with (where its public URL is https, or loopback in tests).

A link can be forwarded, so opening one first establishes whose browser it is (decision 0062): a signed-in person's
consent sends the browser through the team's provider (oauth/server/browser.py) and opens only for that person; a
`jv_` token's consent shows a page naming the token and the server, and opens when that page is confirmed (a form
with a CSRF cookie, so no other site can confirm it); the local user's (no sign-in, loopback) opens at once.
"""

from __future__ import annotations

import html
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from opentelemetry.trace import SpanKind
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from jarvis.aggregator.downstream.auth.consent import (
    COOKIE,
    START_PATH,
    ConsentFailed,
    Consents,
    Described,
    Flow,
    NotYourConsent,
    cookie_name,
    needs_sign_in,
    person_label,
    signed_in_person,
)
from jarvis.aggregator.downstream.auth.provider import CALLBACK_PATH, CLIENT_DOCUMENT_PATH, client_document
from jarvis.aggregator.downstream.auth.relay import ConsentRelay, Opened, Returned
from jarvis.common import tracing

SIGN_IN_PURPOSE = "downstream-consent"
CONFIRM_COOKIE = "jarvis_downstream_confirm"
LOCAL_PERSON = "local"
_NO_STORE = {"cache-control": "no-store", "referrer-policy": "no-referrer"}


class SignedIn(Protocol):
    """Who the team's provider signed in (oauth/upstream.py's Identity): here only whose consent it may open."""

    @property
    def subject(self) -> str: ...


class StartedSignIn(Protocol):
    @property
    def url(self) -> str: ...

    def set_on(self, response: Response, secure: bool) -> Response: ...


class SignsInBrowsers(Protocol):
    """The authorization server's browser sign-in (oauth/server/browser.py), which sits above this room."""

    handlers: dict[str, Callable[[Any, dict[str, Any]], Awaitable[Response]]]

    async def start(self, purpose: str, payload: dict[str, Any]) -> StartedSignIn: ...


def _page(title: str, text: str, status: int = 200, form: str = "") -> HTMLResponse:
    body = (
        f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>{form}"
    )
    return HTMLResponse(body, status_code=status, headers=_NO_STORE)


class ConsentRoutes:
    """`relay`: where Jarvis has Redis, the other workers and replicas, asked for a consent this process lacks.
    `base_url`: Jarvis's configured public URL, the only origin its pages and documents name."""

    def __init__(
        self,
        consents: Consents | None,
        relay: ConsentRelay | None,
        base_url: Callable[[], Awaitable[str]],
        sign_in: SignsInBrowsers | None = None,
    ) -> None:
        self.consents = consents
        self.relay = relay
        self.base_url = base_url
        # Signed-in people's browsers are proven through `sign_in` (the team's provider, where Jarvis has sign-in),
        # whose returns for a consent come back here.
        self.sign_in = sign_in
        if sign_in is not None:
            sign_in.handlers[SIGN_IN_PURPOSE] = self.identified

    def routes(self) -> list[Route]:
        return [
            Route(START_PATH, self.start, methods=["GET"]),
            Route(START_PATH, self.confirm, methods=["POST"]),
            Route(CALLBACK_PATH, self.callback),
            Route(CLIENT_DOCUMENT_PATH, self.client_document),
        ]

    async def _secure(self) -> bool:
        return (await self.base_url()).startswith("https://")

    async def _describe(self, flow_id: str) -> Described:
        assert self.consents is not None
        if self.relay is not None and not self.consents.holds(flow_id):
            return await self.relay.describe(flow_id)
        return self.consents.describe(flow_id)

    async def start(self, request: Request) -> Response:
        if self.consents is None:
            return _page("Not available", "This Jarvis keeps no per-person authorizations.", 404)
        flow_id = request.query_params.get("flow", "")
        try:
            described = await self._describe(flow_id)
        except ConsentFailed as exc:
            return _page("Link not usable", str(exc), 400)
        if needs_sign_in(described.person):
            if self.sign_in is None:
                return _page("Not available", "This Jarvis cannot sign you in to check whose link this is.", 503)
            started = await self.sign_in.start(SIGN_IN_PURPOSE, {"flow": flow_id})
            redirect = RedirectResponse(started.url, status_code=303, headers=_NO_STORE)
            return started.set_on(redirect, await self._secure())
        if described.person == LOCAL_PERSON:
            return await self._open(flow_id, "")
        return await self._confirmation(flow_id, described)

    async def _confirmation(self, flow_id: str, described: Described) -> Response:
        """The page a token's consent opens from: it names the token and the server, and only its form opens it."""
        csrf = secrets.token_urlsafe(24)
        form = (
            f"<form method=post action='{START_PATH}'>"
            f"<input type=hidden name=flow value='{html.escape(flow_id)}'>"
            f"<input type=hidden name=csrf value='{html.escape(csrf)}'>"
            f"<button type=submit>Continue to {html.escape(described.server)}</button></form>"
        )
        page = _page(
            f"Connect {described.server}?",
            f"Jarvis will use '{described.server}' with the account you approve next, for "
            f"{person_label(described.person)}. Whoever holds that token acts as you at '{described.server}'. "
            "Continue only if you asked for this from your own assistant; if someone sent you this link, close it.",
            form=form,
        )
        page.set_cookie(
            f"{CONFIRM_COOKIE}_{flow_id[:12]}",
            csrf,
            max_age=900,
            path=START_PATH,
            httponly=True,
            secure=await self._secure(),
            samesite="strict",
        )
        return page

    async def confirm(self, request: Request) -> Response:
        """The confirmation page's form: opens a consent that needs no sign-in (a signed-in person's never opens
        here: Consents.open refuses it without the person proven)."""
        if self.consents is None:
            return _page("Not available", "This Jarvis keeps no per-person authorizations.", 404)
        form = await request.form()
        flow_id, csrf = str(form.get("flow", "")), str(form.get("csrf", ""))
        cookie = request.cookies.get(f"{CONFIRM_COOKIE}_{flow_id[:12]}", "")
        if not csrf or not secrets.compare_digest(csrf, cookie):
            return _page(
                "Link not usable", "This confirmation did not come from Jarvis's page; open the link again.", 400
            )
        return await self._open(flow_id, "")

    async def identified(self, identity: SignedIn, payload: dict[str, Any]) -> Response:
        """The team's provider signed the browser in: open the consent if it is this person's."""
        return await self._open(str(payload.get("flow", "")), signed_in_person(identity.subject))

    async def _open(self, flow_id: str, proven: str) -> Response:
        assert self.consents is not None
        try:
            if self.relay is not None and not self.consents.holds(flow_id):
                opened = await self.relay.open(flow_id, proven)
            else:
                flow, target = self.consents.open(flow_id, proven)
                opened = Opened(target, cookie_name(flow.id), flow.nonce)
        except NotYourConsent as exc:
            return _page("Not your link", str(exc), 403)
        except ConsentFailed as exc:
            return _page("Link not usable", str(exc), 400)
        response = RedirectResponse(opened.target, status_code=302, headers=_NO_STORE)
        response.set_cookie(
            opened.cookie,
            opened.nonce,
            max_age=900,
            path="/oauth/downstream",
            httponly=True,
            secure=await self._secure(),
            samesite="lax",
        )
        return response

    async def callback(self, request: Request) -> Response:
        if self.consents is None:
            return _page("Not available", "This Jarvis keeps no per-person authorizations.", 404)
        flow = self.consents.flow_for_state(request.query_params.get("state", ""))
        # Where traced, the browser's return is a span of the call that asked for the consent (its flow kept it).
        attributes = {"jarvis.downstream.server": flow.server} if flow is not None else {}
        with tracing.continued("consent callback", flow.trace if flow else {}, SpanKind.SERVER, attributes):
            return await self._returned(request, self.consents, flow)

    async def _returned(self, request: Request, consents: Consents, flow: Flow | None) -> Response:
        query = request.query_params
        state = query.get("state", "")
        answer = (query.get("code", ""), query.get("error", ""), query.get("iss"), query.get("error_description", ""))
        try:
            if flow is None and self.relay is not None:
                cookies = {k: v for k, v in request.cookies.items() if k.startswith(COOKIE)}
                done: Flow | Returned = await self.relay.returned(state, cookies, *answer)
            else:
                cookie = request.cookies.get(cookie_name(flow.id), "") if flow is not None else ""
                done = await consents.returned(state, cookie, *answer)
        except ConsentFailed as exc:
            return _page("Authorization not accepted", str(exc), 400)
        if done.error:
            return _page("Not connected", done.error, 400)
        if not done.connected:
            return _page("Still connecting", "Jarvis is finishing the authorization; call again in a moment.", 202)
        return _page(
            "Connected",
            f"Jarvis is connected to '{done.server}' with the account you approved there, for "
            f"{person_label(done.person)}. Go back to your assistant and call again.",
        )

    async def client_document(self, _: Request) -> Response:
        """The Client ID Metadata Document: its URL is the client id Jarvis names itself by (provider.client_id_url).
        Built from the configured public URL alone: a request's Host names nothing here."""
        return JSONResponse(client_document(await self.base_url()))
