"""The sign-in pages in a real browser (issue 31 item 2): headless Chromium with JavaScript off walks from a client's
authorization request through the real OpenID provider's login page (npm oidc-provider) and Jarvis's consent page
back to the client's redirect URI, a listener on loopback, typing and clicking as a person would.

What only a browser checks: the pages work without scripts, the consent form's CSRF cookie is set and sent back
(HttpOnly, SameSite=Lax, path /oauth), the pages' Content-Security-Policy lets the consent post's redirect reach
the client, and a consent posted without the cookie is refused with a page, never a redirect."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest

from tests.support.browser import Browser, chromium
from tests.support.signin import authorization_request, signin_jarvis
from tests.support.stack import RunningJarvis, mcp_client, result_json


@pytest.fixture(scope="module")
def signin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    with signin_jarvis(tmp_path_factory) as running:
        yield running


class ClientListener:
    """The MCP client's redirect URI: records each authorization response and shows a plain page."""

    def __init__(self) -> None:
        self.answers: list[dict[str, str]] = []
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                asked = urlsplit(self.path)
                if asked.path == "/callback":  # not the browser's /favicon.ico
                    listener.answers.append({k: v[0] for k, v in parse_qs(asked.query).items()})
                body = b"<!doctype html><title>client</title><p>Back at the client."
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/callback"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def listener() -> Iterator[ClientListener]:
    made = ClientListener()
    try:
        yield made
    finally:
        made.server.shutdown()
        made.server.server_close()


def client_request(jarvis: RunningJarvis, redirect: str) -> tuple[str, str, str]:
    """A client registered for `redirect`: (client id, code verifier, the authorization URL it sends the person to)."""
    return authorization_request(jarvis, redirect, "jarvis", "browser-state", "Browser test client")


def log_in_at_the_provider(browser: Browser, jarvis: RunningJarvis, start: str, account: str) -> str:
    """From the client's authorization URL to Jarvis's consent page (its HTML), through the provider's login form."""
    login = browser.open(start)
    assert not login.url.startswith(jarvis.base_url), f"Jarvis did not send the browser to the provider: {login.url}"
    assert 'name="login"' in login.html
    browser.type_into("input[name=login]", account)
    browser.type_into("input[name=password]", "any password")
    consent = browser.click("button[type=submit]")
    assert consent.url.startswith(jarvis.url("/oauth/callback")), consent.url
    assert consent.status == 200
    # Plain server-rendered HTML: no script, nothing loaded from elsewhere, never framed.
    assert "<script" not in consent.html.lower()
    assert consent.headers["content-security-policy"].startswith("default-src 'none'")
    assert consent.headers["x-frame-options"] == "DENY"
    return consent.html


def test_alice_signs_in_and_allows_in_a_browser_without_javascript(
    signin: RunningJarvis, listener: ClientListener
) -> None:
    client_id, verifier, start = client_request(signin, listener.url)
    with chromium() as browser:
        consent = log_in_at_the_provider(browser, signin, start, "alice")
        assert "Allow access to Jarvis?" in consent
        assert "Signed in as <strong>Alice Example</strong>" in consent
        assert "Browser test client" in consent
        assert "<code>jarvis</code>" in consent
        (cookie,) = [c for c in browser.cookies() if c["name"] == "jarvis_consent"]
        assert cookie["httpOnly"] is True
        assert cookie["sameSite"] == "Lax"
        assert cookie["path"] == "/oauth"
        back = browser.click("button[value=allow]")
    assert back.url.startswith(listener.url)
    (answer,) = listener.answers
    assert answer["state"] == "browser-state"
    assert answer["iss"] == signin.base_url
    form = {
        "grant_type": "authorization_code",
        "code": answer["code"],
        "code_verifier": verifier,
        "client_id": client_id,
        "redirect_uri": listener.url,
    }
    tokens = httpx2.post(signin.url("/oauth/token"), data=form)
    assert tokens.status_code == 200, tokens.text
    assert tokens.json()["scope"] == "jarvis"

    async def status() -> bool:
        async with mcp_client(signin.url("/mcp/jarvis"), tokens.json()["access_token"]) as client:
            return bool(result_json(await client.call_tool("jarvis_check_status", {}))["healthy"])

    assert anyio.run(status)


def test_bob_sees_his_narrower_scope_and_denies(signin: RunningJarvis, listener: ClientListener) -> None:
    _, _, start = client_request(signin, listener.url)
    with chromium() as browser:
        consent = log_in_at_the_provider(browser, signin, start, "bob")
        assert "<code>jarvis:jarvis_check_status</code>" in consent  # asked `jarvis`, his role's tool inside it
        back = browser.click("button[value=deny]")
    assert back.url.startswith(listener.url)
    (answer,) = listener.answers
    assert answer["error"] == "access_denied"
    assert answer["state"] == "browser-state"
    assert answer["iss"] == signin.base_url
    assert "code" not in answer


def test_a_consent_posted_without_its_cookie_is_refused_with_a_page(
    signin: RunningJarvis, listener: ClientListener
) -> None:
    """A forged consent (the form posted from a browser that never got the cookie) never reaches the client."""
    _, _, start = client_request(signin, listener.url)
    with chromium() as browser:
        log_in_at_the_provider(browser, signin, start, "alice")
        browser.send("Network.deleteCookies", {"name": "jarvis_consent", "url": signin.url("/oauth/consent")})
        refused = browser.click("button[value=allow]")
    assert refused.url == signin.url("/oauth/consent")
    assert refused.status == 400
    assert "Sign-in refused" in refused.html
    assert "CSRF" in refused.html
    assert listener.answers == []


def test_carol_whom_no_role_covers_is_told_why_and_the_client_hears_it(
    signin: RunningJarvis, listener: ClientListener
) -> None:
    """Issue 48 item 2: the page says who signed in with which groups and what an admin runs; its one button takes
    the person back, and the client's `access_denied` says the same, never that the person declined."""
    _, _, start = client_request(signin, listener.url)
    with chromium() as browser:
        page = log_in_at_the_provider(browser, signin, start, "carol")
        said = (
            "Signed in as Carol Example (groups: qa, design); no Jarvis role grants what Browser test client asks for"
        )
        assert said in page
        assert "jarvis role set &lt;name&gt; --group &lt;group&gt; --scope &lt;scope&gt;" in page
        assert "value=allow" not in page  # nothing to allow
        back = browser.click("button[type=submit]")
    assert back.url.startswith(listener.url)
    (answer,) = listener.answers
    assert answer["error"] == "access_denied"
    assert answer["error_description"].startswith(said)
    assert "jarvis role set <name> --group <group> --scope <scope>" in answer["error_description"]
    assert "declined" not in answer["error_description"]
    assert answer["state"] == "browser-state"
    assert "code" not in answer
