"""The console's session cookie and form checks (aggregator/console/pages.py), on a Console whose registry records
are a dict: the cookie's attributes behind an https public URL, the one-time link used once, and the CSRF token and
Origin checks every form passes through (the browser tests cover the same on a running Jarvis over http)."""

from __future__ import annotations

import hashlib
import time
from types import SimpleNamespace
from typing import Any, cast

import anyio
from starlette.applications import Starlette
from starlette.testclient import TestClient

from jarvis.aggregator.console.build import build_console
from jarvis.aggregator.console.calls import ToolCalls
from jarvis.aggregator.console.pages import Console
from jarvis.aggregator.console.sessions import Sessions
from jarvis.aggregator.console.web import COOKIE
from jarvis.aggregator.downstream.hosting.host import DownstreamHost
from jarvis.aggregator.gateways.oauth_state import OAuthStateGateway
from jarvis.aggregator.mcp_server import Binding
from jarvis.aggregator.settings import AggregatorSettings

PUBLIC = "https://jarvis.example.test"


class Records:
    """The registry's sign-in records, in a dict (put, get, take once, delete; expiry by ttl)."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], tuple[dict[str, Any], float, bool]] = {}

    async def put(self, kind: str, key: str, body: dict[str, Any], *, family: str = "", ttl: float = 0) -> None:
        self.rows[kind, key] = (body, time.time() + ttl if ttl else 0, False)

    async def get(self, kind: str, key: str) -> Any:
        row = self.rows.get((kind, key))
        return SimpleNamespace(body=row[0]) if row and (not row[1] or row[1] > time.time()) else None

    async def take(self, kind: str, key: str) -> Any:
        row = self.rows.get((kind, key))
        if row is None:
            return None
        self.rows[kind, key] = (row[0], row[1], True)
        return SimpleNamespace(body=row[0]), not row[2]

    async def delete(self, kind: str, key: str) -> bool:
        return self.rows.pop((kind, key), None) is not None


async def public_url() -> str:
    return PUBLIC


def console(records: Records) -> Console:
    return Console(
        Sessions(cast(OAuthStateGateway, records)),
        ToolCalls([], cast(Binding, None)),
        public_url,
        ["http://127.0.0.1:*"],
        None,
        None,
        list,
        lambda _: None,
        tokens_required=True,
        announce=True,
    )


def opened(records: Records) -> tuple[TestClient, str, str]:
    """A client that opened the local admin's one-time link: its Set-Cookie header, and the session's CSRF token."""
    page = console(records)
    link = anyio.run(page.sessions.mint_link)
    client = TestClient(Starlette(routes=page.routes()), base_url="http://127.0.0.1:8000")
    answer = client.get(f"/console/?token={link}", follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/console/"
    session_id = answer.headers["set-cookie"].split(";")[0].removeprefix(f"{COOKIE}=")
    # TestClient speaks http: the Secure cookie is sent by hand, as a browser on https would.
    client.cookies.set(COOKIE, session_id, path="/console")
    body = records.rows["console", "session:" + hashlib.sha256(session_id.encode()).hexdigest()][0]
    return client, answer.headers["set-cookie"], str(body["csrf"])


def test_the_cookie_is_secure_behind_https_and_scoped_to_the_console() -> None:
    _, cookie, _ = opened(Records())
    attributes = {part.strip().split("=")[0].lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "secure", "path", "samesite", "max-age"} <= attributes
    assert "Path=/console" in cookie
    assert "SameSite=lax" in cookie


def test_a_link_opens_once() -> None:
    records = Records()
    page = console(records)
    link = anyio.run(page.sessions.mint_link)
    client = TestClient(Starlette(routes=page.routes()), base_url="http://127.0.0.1:8000")
    assert client.get(f"/console/?token={link}", follow_redirects=False).status_code == 303
    assert client.get(f"/console/?token={link}", follow_redirects=False).status_code == 403
    assert client.get("/console/?token=made-up", follow_redirects=False).status_code == 403


def test_a_form_needs_the_sessions_token_and_jarvis_origin() -> None:
    """Sign out is a form like every other: refused (the session kept) from another origin, from another site by
    Sec-Fetch-Site, without the token or with another; accepted from the public origin, from the loopback origin
    the request was sent to, or from a client that sends no Origin but has the token."""
    records = Records()
    client, _, csrf = opened(records)
    refused = [
        ({"origin": "https://evil.example"}, csrf),
        ({"origin": "http://127.0.0.1:9999"}, csrf),  # loopback, but not the origin the request went to
        ({"origin": PUBLIC, "sec-fetch-site": "cross-site"}, csrf),
        ({"origin": PUBLIC}, ""),
        ({"origin": PUBLIC}, "another"),
    ]
    for headers, token in refused:
        answer = client.post("/console/logout", data={"csrf": token}, headers=headers, follow_redirects=False)
        assert answer.status_code == 403, (headers, token)
        assert client.get("/console/").status_code == 200, "the session is kept"
    for origin in (PUBLIC, "http://127.0.0.1:8000", None):
        client, _, csrf = opened(records)
        headers = {"origin": origin} if origin else {}
        answer = client.post("/console/logout", data={"csrf": csrf}, headers=headers, follow_redirects=False)
        assert answer.status_code == 303, origin
        assert client.get("/console/").status_code == 401, "signed out"


def test_the_link_is_printed_only_on_loopback_and_by_one_worker() -> None:
    """A log shipped elsewhere must not carry the local admin's way in: only a loopback Jarvis prints the link, and
    of several workers only the first."""

    def announces(**fields: Any) -> bool:
        settings = AggregatorSettings(**fields)
        downstream = cast(DownstreamHost, SimpleNamespace(personal=None, profiles={}))
        built = build_console(
            settings,
            cast(OAuthStateGateway, Records()),
            cast(Binding, None),
            [],
            public_url,
            None,
            downstream,
            lambda _: None,
        )
        return built.announce_link

    assert announces(host="127.0.0.1")
    assert announces(host="::1")
    assert not announces(host="127.0.0.1", worker_slot=1)
    assert not announces(host="0.0.0.0")
    assert not announces(host="10.0.0.5")
