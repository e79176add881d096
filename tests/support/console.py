"""The console's browser tests' tools: Debian's headless Chromium driven through its chromedriver by Selenium, a
screenshot of every page a test looks at (in the test's tmp dir), and the local admin's one-time link from the log.

The tests fail, never skip, when Chromium or chromedriver is missing: .ci/run installs them.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.support.stack import RunningJarvis

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
LINK = re.compile(r"(http://\S+/console/\?token=[\w-]+)")
# Where the README's pictures of the console are: `JARVIS_DRAW_DOCS=1 pytest tests/e2e/test_console_signin.py
# tests/e2e/test_console_admin.py` takes them again from the real pages (Shots.for_docs).
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
COOKIE = "jarvis_console"


class Shots:
    """Numbered screenshots of the pages a test looked at, in its tmp dir."""

    def __init__(self, driver: WebDriver, directory: Path) -> None:
        self.driver = driver
        self.directory = directory
        self.count = 0

    def __call__(self, name: str) -> Path:
        self.count += 1
        path = self.directory / f"{self.count:02d}-{name}.png"
        assert self.driver.save_screenshot(str(path)), f"no screenshot at {path}"
        return path

    def for_docs(self, name: str) -> Path:
        """A screenshot like any other, kept as the docs' `console-<name>.png` too when JARVIS_DRAW_DOCS is set."""
        path = self(name)
        if os.environ.get("JARVIS_DRAW_DOCS"):
            shutil.copyfile(path, DOCS_IMAGES / f"console-{name}.png")
        return path


@contextmanager
def chromium(directory: Path) -> Iterator[tuple[WebDriver, Shots]]:
    """A fresh headless Chromium (its own profile under `directory`) and its screenshots, saved in `directory`."""
    for needed in (CHROMIUM, CHROMEDRIVER):
        if not Path(needed).exists():
            raise AssertionError(f"{needed} is missing: install Debian's chromium and chromium-driver")
    options = Options()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(argument)
    options.add_argument(f"--user-data-dir={directory / 'profile'}")
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(60)
    try:
        yield driver, Shots(driver, directory)
    finally:
        driver.quit()


def printed_link(jarvis: RunningJarvis, timeout: float = 30) -> str:
    """The local admin's one-time console link, as `jarvis up` printed it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = LINK.search(jarvis.log())
        if found:
            return found.group(1)
        time.sleep(0.2)
    raise AssertionError(f"jarvis up printed no console link:\n{jarvis.log()[-3000:]}")


@contextmanager
def local_admin(jarvis: RunningJarvis, directory: Path) -> Iterator[tuple[WebDriver, Shots]]:
    """The local admin's Chromium, signed in by the one-time link `jarvis up` printed (the only one it prints)."""
    with chromium(directory) as (driver, shot):
        driver.get(printed_link(jarvis))
        wait_for(lambda: driver.current_url == jarvis.url("/console/"), "the link's redirect to the console")
        yield driver, shot


def sign_in_at_provider(driver: WebDriver, jarvis: RunningJarvis, account: str) -> None:
    """Sign `account` in to the console through the team's provider (oidc-provider's login form), as a person."""
    driver.get(jarvis.url("/console/"))
    driver.find_element(By.ID, "signin").click()
    driver.find_element(By.NAME, "login").send_keys(account)
    driver.find_element(By.NAME, "password").send_keys("any")
    driver.find_element(By.CSS_SELECTOR, "button[type=submit], input[type=submit]").click()
    wait_for(lambda: driver.current_url.startswith(jarvis.url("/console/")), f"{account} back at the console")


def wait_for(check: object, what: str, timeout: float = 30) -> None:
    """Poll `check` until it is true. An element it read may belong to the page a form post is replacing (stale):
    that is "not yet", not a failure."""
    assert callable(check)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except StaleElementReferenceException:
            pass
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def session_cookie(driver: WebDriver) -> dict[str, object]:
    found = [c for c in driver.get_cookies() if c["name"] == COOKIE]
    assert len(found) == 1, driver.get_cookies()
    return found[0]


def as_browser(jarvis: RunningJarvis, driver: WebDriver) -> httpx2.Client:
    """An HTTP client holding the browser's console session: to read a status code, which a browser does not say."""
    return httpx2.Client(base_url=jarvis.base_url, cookies={COOKIE: str(session_cookie(driver)["value"])}, timeout=30)


def personal_token(jarvis: RunningJarvis, account: str, name: str, scopes: list[str], directory: Path) -> str:
    """The secret of a token `account` makes for themselves on My tokens (decision 0071), signed in through the
    team's provider in a browser of their own: the only way a person's token is made."""
    with chromium(directory) as (driver, _):
        sign_in_at_provider(driver, jarvis, account)
        with as_browser(jarvis, driver) as client:
            page = client.get("/console/tokens").text
            csrf = page.split('name="csrf" value="')[1].split('"')[0]
            made = client.post(
                "/console/tokens",
                data={"csrf": csrf, "name": name, "scope": " ".join(scopes)},
                headers={"origin": jarvis.base_url},
            )
        assert made.status_code == 200, made.text
        secret = made.text.split('id="secret"')[1].split(">", 1)[1].split("<", 1)[0]
        assert secret.startswith("jv_"), secret
        return secret
