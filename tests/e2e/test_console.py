"""The console on `jarvis up` without sign-in (issue 49): in real headless Chromium, the local admin opens it from the
one-time link Jarvis printed, the session cookie stays under /console, a token is created and its secret shown
once, and a form posted from another origin changes nothing. Screenshots of each page are in the test's tmp dir."""

from __future__ import annotations

import http.server
import json
import shlex
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.support.agent_clients import client_env, mcp_list
from tests.support.console import Shots, as_browser, chromium, printed_link, session_cookie, wait_for
from tests.support.console_fuzz import FORMS, GARBAGE, fuzz_console
from tests.support.downstream import create_profile, create_toy
from tests.support.stack import RunningJarvis, free_port, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def jarvis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    running = start_jarvis(tmp_path_factory.mktemp("console"), env={"HOME": str(tmp_path_factory.mktemp("home"))})
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def browser(jarvis: RunningJarvis, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    """The local admin's Chromium, signed in by the one-time link `jarvis up` printed (the only one it prints)."""
    with chromium(tmp_path_factory.mktemp("browser")) as (driver, _):
        link = printed_link(jarvis)
        driver.get(jarvis.url("/console/"))
        assert driver.find_element(By.TAG_NAME, "h1").text == "Sign in to Jarvis"  # never an open page
        driver.get(link)
        wait_for(lambda: driver.current_url == jarvis.url("/console/"), "the link's redirect to the console")
        yield Browser(driver, link)


@dataclass
class Browser:
    driver: WebDriver
    link: str

    def shots(self, directory: Path) -> Shots:
        return Shots(self.driver, directory)


@contextmanager
def other_origin(page: str) -> Iterator[str]:
    """A page served from another origin (another port of 127.0.0.1: same site, another origin)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = page.encode()
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def token_names(client: httpx2.Client) -> list[str]:
    page = client.get("/console/tokens")
    assert page.status_code == 200, page.text
    return [row.split("</th>")[0] for row in page.text.split('<th scope="row">')[1:]]


def test_the_one_time_link_signs_the_local_admin_in_once(
    jarvis: RunningJarvis, browser: Browser, tmp_path: Path
) -> None:
    """The link opened a session whose cookie is HttpOnly, SameSite=Lax and scoped to /console (so a downstream
    server on the same port never gets it); it works once: another browser opening it gets nothing."""
    driver, shot = browser.driver, browser.shots(tmp_path)
    driver.get(jarvis.url("/console/"))
    shot("connect-a-client")
    assert driver.find_element(By.TAG_NAME, "h1").text == "Connect a client"
    assert driver.find_element(By.ID, "who").text == "local"
    configs = [e.get_attribute("textContent") for e in driver.find_elements(By.CSS_SELECTOR, "pre.config")]
    assert f"claude mcp add --transport http jarvis {jarvis.url('/mcp/jarvis')}" in configs
    cookie = session_cookie(driver)
    assert cookie["path"] == "/console"
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Lax"
    assert cookie["secure"] is False  # http on loopback; Secure where the public URL is https
    # Chromium sends it to /console only: a page elsewhere on the port (a profile, a share) never sees it.
    assert driver.execute_script("return document.cookie") == ""  # HttpOnly: no script reads it

    with chromium(tmp_path / "another") as (other, other_shot):
        other.get(browser.link)
        other_shot("link-opened-again")
        assert other.find_element(By.TAG_NAME, "h1").text == "Not allowed"
        assert not [c for c in other.get_cookies() if c["name"] == "jarvis_console"]
        other.get(jarvis.url("/console/tokens"))
        assert other.find_element(By.TAG_NAME, "h1").text == "Sign in to Jarvis"
    assert httpx2.get(browser.link).status_code == 403


def test_the_claude_code_config_copied_from_the_page_connects(
    jarvis: RunningJarvis, browser: Browser, tmp_path: Path
) -> None:
    """The Claude Code command the page shows for the jarvis surface, run as shown by a fresh user: `claude mcp
    list` then finds Jarvis there and connected."""
    driver, shot = browser.driver, browser.shots(tmp_path)
    driver.get(jarvis.url("/console/"))
    section = driver.find_element(By.ID, "surface-jarvis")
    section.find_element(By.TAG_NAME, "summary").click()
    shot("claude-code-config")
    command = section.find_element(By.CSS_SELECTOR, "pre.config").text
    assert command.startswith("claude mcp add")
    links = {a.text: a.get_attribute("href") for a in section.find_elements(By.CSS_SELECTOR, ".install a")}
    assert set(links) == {"Visual Studio Code", "Cursor"}
    assert str(links["Visual Studio Code"]).startswith("vscode:mcp/install?")
    home = tmp_path / "home"
    home.mkdir()
    added = subprocess.run(
        shlex.split(command), cwd=home, env=client_env(home), capture_output=True, text=True, timeout=120, check=False
    )
    assert added.returncode == 0, added.stdout + added.stderr
    listed = mcp_list("claude", home, home)
    assert f"jarvis: {jarvis.url('/mcp/jarvis')} (HTTP) - ✔ Connected" in listed, listed


async def test_a_token_is_created_with_its_secret_shown_once(
    jarvis: RunningJarvis, browser: Browser, tmp_path: Path
) -> None:
    """The admin creates a token with chosen scopes: the page shows its secret once, which works at its surface;
    the list then shows it by name and prefix, never the secret; revoking it ends it."""
    driver, shot = browser.driver, browser.shots(tmp_path)
    driver.get(jarvis.url("/console/tokens"))
    driver.find_element(By.ID, "name").send_keys("from-the-console")
    driver.find_element(By.CSS_SELECTOR, "input[name=scope][value=jarvis]").click()
    driver.find_element(By.ID, "create").click()
    wait_for(lambda: driver.find_elements(By.ID, "secret") or driver.find_elements(By.ID, "error"), "the answer")
    shot("token-created")
    secret = driver.find_element(By.ID, "secret").text
    assert secret.startswith("jv_"), secret
    async with mcp_client(jarvis.url("/mcp/jarvis"), secret) as client:
        assert (await client.list_tools()).tools

    driver.get(jarvis.url("/console/tokens"))
    shot("token-listed")
    assert not driver.find_elements(By.ID, "secret")
    assert secret not in driver.page_source
    row = driver.find_element(By.XPATH, "//tr[th[text()='from-the-console']]")
    assert "jarvis" in row.text
    assert "active" in row.text
    row.find_element(By.TAG_NAME, "button").click()
    wait_for(lambda: driver.find_elements(By.ID, "note"), "the revocation's answer")
    shot("token-revoked")
    assert driver.find_element(By.ID, "note").text == "Revoked."
    assert not driver.find_elements(By.XPATH, "//tr[th[text()='from-the-console']]")
    listed = json.loads(jarvis.cli("token", "list", "--all", "--json").stdout)
    tokens = listed["tokens"] if isinstance(listed, dict) else listed
    revoked = [t for t in tokens if t["name"] == "from-the-console"]
    assert len(revoked) == 1, tokens
    assert revoked[0].get("revoked_at"), revoked


def test_a_form_from_another_origin_changes_nothing(jarvis: RunningJarvis, browser: Browser, tmp_path: Path) -> None:
    """A page on another origin posting the console's token form (the browser sending the session cookie along, as
    it does on the same site) is refused with 403 and creates nothing; so is a post with the right CSRF token but
    another Origin, and one without the token from Jarvis's own origin."""
    driver, shot = browser.driver, browser.shots(tmp_path)
    with as_browser(jarvis, driver) as client:
        before = token_names(client)
    attack = (
        f"<!doctype html><title>cats</title><form method=post action='{jarvis.url('/console/tokens')}'>"
        "<input type=hidden name=csrf value=guessed><input type=hidden name=name value=stolen>"
        "<input type=hidden name=scope value=admin><button id=go>See cats</button></form>"
    )
    with other_origin(attack) as page:
        driver.get(page)
        driver.find_element(By.ID, "go").click()
        wait_for(lambda: driver.current_url.startswith(jarvis.url("/console/")), "the post's answer")
        shot("cross-origin-post")
        assert driver.find_element(By.TAG_NAME, "h1").text == "Not allowed"
        assert "another site" in driver.find_element(By.ID, "why").text

    with as_browser(jarvis, driver) as client:
        assert token_names(client) == before
        page = client.get("/console/tokens").text
        csrf = page.split('name="csrf" value="')[1].split('"')[0]
        form = {"csrf": csrf, "name": "stolen", "scope": "admin"}
        evil = client.post("/console/tokens", data=form, headers={"origin": "http://evil.example"})
        assert evil.status_code == 403, evil.text
        no_token = client.post("/console/tokens", data={**form, "csrf": ""}, headers={"origin": jarvis.base_url})
        assert no_token.status_code == 403, no_token.text
        assert token_names(client) == before
        # The same post from Jarvis's own page does create it: the refusals above were the checks, not the form.
        own = client.post("/console/tokens", data=form, headers={"origin": jarvis.base_url})
        assert own.status_code == 200, own.text
        assert token_names(client) == [*before, "stolen"]


async def test_own_keys_are_set_and_never_shown_back(jarvis: RunningJarvis, browser: Browser, tmp_path: Path) -> None:
    """A server whose TOY_NAME is each person's own (servers.per_person): My accounts names the key, the person types
    a value, the server then runs with it, and no page shows it back; Forget my keys removes it."""
    async with mcp_client(jarvis.url()) as client:
        config = {"action": "set", "key": "servers.per_person", "value": {"keyed": ["TOY_NAME"]}}
        result_json(await client.call_tool("jarvis_config", config))
        await create_toy(client, "keyed")
        await create_profile(client, "keyed", "keyed")
    driver, shot = browser.driver, browser.shots(tmp_path)
    driver.get(jarvis.url("/console/accounts"))

    def listed() -> bool:
        if driver.find_elements(By.ID, "keys-keyed"):
            return True
        driver.refresh()  # the server's plan reaches the host a moment after it is created
        return False

    wait_for(listed, "the keyed server listed")
    shot("keys-needed")
    section = driver.find_element(By.ID, "keys-keyed")
    assert section.find_element(By.CLASS_NAME, "state").text == "needs keys"
    section.find_element(By.ID, "key-keyed-TOY_NAME").send_keys("console-secret-name")
    section.find_element(By.XPATH, ".//button[text()='Save my keys']").click()
    wait_for(lambda: driver.find_elements(By.ID, "note"), "the keys saved")
    shot("keys-saved")
    assert driver.find_element(By.ID, "note").text == "Your keys for keyed are saved."
    assert driver.find_element(By.CSS_SELECTOR, "#keys-keyed .state").text == "ready"
    assert "console-secret-name" not in driver.page_source
    async with mcp_client(jarvis.url("/mcp/profile/keyed")) as client:
        result = await client.call_tool("keyed__whoami", {})
    assert json.loads(str(getattr(result.content[0], "text", "")))["name"] == "console-secret-name"

    driver.get(jarvis.url("/console/accounts"))
    assert "console-secret-name" not in driver.page_source
    driver.find_element(By.XPATH, "//section[@id='keys-keyed']//button[text()='Forget my keys']").click()
    wait_for(lambda: driver.find_elements(By.ID, "note"), "the keys forgotten")
    shot("keys-forgotten")
    assert driver.find_element(By.CSS_SELECTOR, "#keys-keyed .state").text == "needs keys"


def test_no_console_form_answers_5xx_to_garbage(jarvis: RunningJarvis, browser: Browser) -> None:
    """Every console form and page, posted or opened with malformed, missing, oversized and mistyped fields, with
    the session and CSRF token and without (tests/support/console_fuzz.py): answered, never a 5xx, nothing in the
    log's tracebacks."""
    with as_browser(jarvis, browser.driver) as client:
        report = fuzz_console(client, jarvis.base_url)
    assert report.requests > len(FORMS) * len(GARBAGE) * 3
    assert report.server_errors == []
    assert sum(count for status, count in report.statuses.items() if status < 500) == report.requests
    assert "Traceback" not in jarvis.log()


def test_signing_out_ends_the_session(jarvis: RunningJarvis, browser: Browser, tmp_path: Path) -> None:
    """Sign out ends the session where it is kept (the registry, for every worker): its cookie, kept by someone,
    opens nothing any more. (Last: the module's browser is signed out after it.)"""
    driver, shot = browser.driver, browser.shots(tmp_path)
    old = str(session_cookie(driver)["value"])
    driver.get(jarvis.url("/console/"))
    driver.find_element(By.CSS_SELECTOR, "form.logout button").click()
    wait_for(lambda: not driver.find_elements(By.ID, "who"), "the signed-out page")
    shot("signed-out")
    assert driver.find_element(By.TAG_NAME, "h1").text == "Sign in to Jarvis"
    assert not [c for c in driver.get_cookies() if c["name"] == "jarvis_console"]
    kept = httpx2.get(jarvis.url("/console/tokens"), cookies={"jarvis_console": old})
    assert kept.status_code == 401
    assert "from-the-console" not in kept.text
