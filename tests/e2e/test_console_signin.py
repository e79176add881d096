"""The console with sign-in (issue 49): in real headless Chromium, people sign in through the team's provider
(oidc-provider), connect and disconnect their own account at a per-person server on My accounts (the
OAuth-protected notes server, through the consent link that opens only for them), and see and do
only what their roles' scopes allow: alice (an admin by a role) creates a token; bob, whose role is narrow, is
refused an admin page by the server (403), not only by a hidden link. Screenshots are in each test's tmp dir."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from tests.support.console import as_browser, chromium, session_cookie, sign_in_at_provider, wait_for
from tests.support.downstream import eventually
from tests.support.per_person_oauth import NOTES_ENV, notes, notes_profile, signed_in
from tests.support.signin import signin_jarvis
from tests.support.stack import RunningJarvis, mcp_client

pytestmark = pytest.mark.anyio

__all__ = ["notes", "notes_profile"]  # fixtures, registered by being here


@pytest.fixture(scope="module")
def jarvis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    """Group dev may use Jarvis, profiles and servers; alice is an admin by a role of her own; bob (group ops) may
    only check status."""
    with signin_jarvis(tmp_path_factory, env=NOTES_ENV) as running:
        developers = ("--scope", "jarvis", "--scope", "profile", "--scope", "servers")
        running.cli("role", "set", "developers", "--group", "dev", *developers)
        running.cli("role", "set", "admins", "--user", "alice@example.test", "--scope", "admin")
        yield running


def denied_token_calls(jarvis: RunningJarvis, who: str) -> list[dict[str, Any]]:
    exported = jarvis.cli("audit", "export", "--token", who, "--tool", "token").stdout.splitlines()
    entries = [json.loads(line) for line in exported]
    # Each entry is bob's, via the console; his page views list his own tokens, refused nothing.
    assert all(e["token_name"] == f"{who} via console" for e in entries), entries
    assert all(e["outcome"] == "ok" for e in entries if e["action"] == "list"), entries
    return [e for e in entries if e["action"] == "create" and e.get("outcome") == "denied"]


def test_no_console_page_opens_without_signing_in(jarvis: RunningJarvis, tmp_path: Path) -> None:
    """With sign-in configured there is no one-time link: the console offers the provider, and nothing else."""
    assert "/console/?token=" not in jarvis.log()
    with chromium(tmp_path) as (driver, shot):
        for path in ("/console/", "/console/accounts", "/console/tokens", "/console/admin/people"):
            driver.get(jarvis.url(path))
            assert driver.find_element(By.TAG_NAME, "h1").text == "Sign in to Jarvis", path
            assert not driver.find_elements(By.ID, "who")
        driver.get(jarvis.url("/console/?token=anything"))
        shot("a-token-is-no-way-in")
        assert driver.find_element(By.TAG_NAME, "h1").text == "Not allowed"


async def test_alice_signs_in_sees_her_accounts_and_creates_a_token(
    jarvis: RunningJarvis, notes_profile: str, tmp_path: Path
) -> None:
    with chromium(tmp_path) as (driver, shot):
        sign_in_at_provider(driver, jarvis, "alice")
        shot.for_docs("alice-signed-in")  # the README's picture of a person's page
        assert driver.find_element(By.ID, "who").text == "alice@example.test"
        cookie = session_cookie(driver)
        assert cookie["path"] == "/console"
        assert cookie["httpOnly"] is True
        assert cookie["sameSite"] == "Lax"
        # Her surfaces and her profile, with their config.
        assert driver.find_element(By.ID, "surface-jarvis")
        configs = [e.get_attribute("textContent") for e in driver.find_elements(By.CSS_SELECTOR, "pre.config")]
        assert f"claude mcp add --transport http jarvis-notes {jarvis.url(notes_profile)}" in configs

        driver.get(jarvis.url("/console/accounts"))
        shot("alice-accounts")
        row = driver.find_element(By.ID, "account-notes")
        assert row.find_element(By.CLASS_NAME, "state").text == "needs consent"
        # Connect opens her consent link: through the provider (it is hers) to the notes server's sign-in, where she
        # signs in as her notes account (the fake's login takes it in the URL), and back to Jarvis.
        row.find_element(By.TAG_NAME, "button").click()
        wait_for(lambda: "/login?" in driver.current_url, "the notes server's sign-in")
        driver.get(driver.current_url + "&account=alice-at-notes")
        wait_for(lambda: driver.find_elements(By.TAG_NAME, "h1"), "the consent's answer")
        shot("alice-connected")
        assert driver.find_element(By.TAG_NAME, "h1").text == "Connected"
        driver.get(jarvis.url("/console/accounts"))
        assert driver.find_element(By.CSS_SELECTOR, "#account-notes .state").text == "connected"
        # Her profile now lists the server's tools, as her own connection lists them.
        token = await asyncio.to_thread(signed_in, jarvis, "alice", notes_profile)

        async def whoami_listed() -> bool:
            async with mcp_client(jarvis.url(notes_profile), token) as client:
                return "notes__whoami" in {t.name for t in (await client.list_tools()).tools}

        await eventually(whoami_listed, what="alice's notes tools listed")
        driver.find_element(By.CSS_SELECTOR, "#account-notes button").click()
        wait_for(lambda: driver.find_elements(By.ID, "note"), "the disconnection's answer")
        shot("alice-disconnected")
        assert driver.find_element(By.ID, "note").text == "Jarvis forgot your authorization or keys at notes."
        assert driver.find_element(By.CSS_SELECTOR, "#account-notes .state").text == "needs consent"

        driver.get(jarvis.url("/console/tokens"))
        driver.find_element(By.ID, "name").send_keys("alice-laptop")
        driver.find_element(By.CSS_SELECTOR, "input[name=scope][value=jarvis]").click()
        driver.find_element(By.ID, "create").click()
        wait_for(lambda: driver.find_elements(By.ID, "secret") or driver.find_elements(By.ID, "error"), "the answer")
        shot("alice-token-created")
        secret = driver.find_element(By.ID, "secret").text
        assert secret.startswith("jv_")
        driver.get(jarvis.url("/console/tokens"))
        shot("alice-tokens")
        assert secret not in driver.page_source
        assert driver.find_element(By.XPATH, "//tr[th[text()='alice-laptop']]")

        driver.get(jarvis.url("/console/admin/people"))
        shot("alice-people")
        assert driver.find_element(By.TAG_NAME, "h1").text == "People"
        # Her row: her effective scopes (by her group's role and her own) and when she last signed in.
        hers = driver.find_element(By.XPATH, "//tr[th[text()='alice@example.test']]")
        assert set(hers.find_element(By.CLASS_NAME, "scopes").text.split()) == {"jarvis", "profile", "servers", "admin"}
        assert hers.find_element(By.CLASS_NAME, "seen").text.endswith(" UTC")


async def test_an_admin_gives_a_group_a_role_and_its_people_see_the_surfaces_at_once(
    jarvis: RunningJarvis, tmp_path: Path
) -> None:
    """Issue 49, browser test 5: alice (an admin) sets a role for group ops on the People page; bob, in ops, sees the
    debug surface on his next page, and no longer once she deletes it: the role is the record `jarvis role` reads."""
    with chromium(tmp_path / "alice") as (alice, shot), chromium(tmp_path / "bob") as (bob, bob_shot):
        sign_in_at_provider(bob, jarvis, "bob")
        assert bob.find_element(By.ID, "surface-jarvis")  # his status check's surface
        assert not bob.find_elements(By.ID, "surface-debug")
        sign_in_at_provider(alice, jarvis, "alice")
        alice.get(jarvis.url("/console/admin/people"))
        alice.find_element(By.ID, "role-name").send_keys("operators")
        alice.find_element(By.ID, "role-groups").send_keys("ops")
        alice.find_element(By.ID, "role-scopes").send_keys("debug, debug:read")
        alice.find_element(By.ID, "set-role").click()
        wait_for(lambda: alice.find_elements(By.ID, "note"), "the role's answer")
        shot("role-set")
        assert alice.find_element(By.ID, "note").text == "Role operators set."
        assert alice.find_element(By.CSS_SELECTOR, "#role-operators .scopes").text == "debug debug:read"
        assert {"name": "operators", "groups": ["ops"], "users": [], "scopes": ["debug", "debug:read"]} in json.loads(
            jarvis.cli("role", "list").stdout
        )

        bob.get(jarvis.url("/console/"))
        bob_shot("bob-with-the-role")
        assert bob.find_element(By.ID, "surface-debug")

        alice.find_element(By.CSS_SELECTOR, "#role-operators button").click()
        wait_for(lambda: alice.find_elements(By.ID, "note"), "the deletion's answer")
        assert alice.find_element(By.ID, "note").text == "Role operators deleted."
        bob.get(jarvis.url("/console/"))
        assert not bob.find_elements(By.ID, "surface-debug")


def test_bob_is_refused_an_admin_page_by_the_server(jarvis: RunningJarvis, tmp_path: Path) -> None:
    """bob's role gives him no admin scope: the page is refused with 403 by the server, whatever he types in the
    address bar; his token page offers only his own scope, and a post asking for admin is refused by the token tool
    as a denied call. Once an admin disables him, his session opens nothing."""
    with chromium(tmp_path) as (driver, shot):
        sign_in_at_provider(driver, jarvis, "bob")
        shot("bob-signed-in")
        assert driver.find_element(By.ID, "who").text == "bob@example.test"
        assert not driver.find_elements(By.LINK_TEXT, "People")
        driver.get(jarvis.url("/console/admin/people"))
        shot("bob-admin-page")
        assert driver.find_element(By.TAG_NAME, "h1").text == "Not allowed"
        assert "alice@example.test" not in driver.page_source
        driver.get(jarvis.url("/console/tokens"))
        shot("bob-tokens")
        offered = [e.get_attribute("value") for e in driver.find_elements(By.CSS_SELECTOR, "input[type=checkbox]")]
        assert "admin" not in offered  # his own scopes only (none once test 5 deleted his group's role)
        with as_browser(jarvis, driver) as client:
            refused = client.get("/console/admin/people")
            assert refused.status_code == 403
            assert "alice@example.test" not in refused.text
            page = client.get("/console/tokens").text
            csrf = page.split('name="csrf" value="')[1].split('"')[0]
            form = {"csrf": csrf, "name": "bob-admin", "scope": "admin"}
            posted = client.post("/console/tokens", data=form, headers={"origin": jarvis.base_url})
            assert posted.status_code == 400
            assert "admin" in posted.text
        tokens = jarvis.cli("token", "list").stdout
        assert "bob-admin" not in tokens
        # The refusal was the call pipeline's, recorded as bob's call like any MCP client's.
        wait_for(lambda: denied_token_calls(jarvis, "bob@example.test"), "bob's refused call in the audit log")

        # Disabled, his session opens nothing more, on the next page he opens.
        jarvis.cli("user", "disable", "bob@example.test")
        driver.get(jarvis.url("/console/"))
        shot("bob-disabled")
        assert driver.find_element(By.TAG_NAME, "h1").text == "Sign in to Jarvis"
        with as_browser(jarvis, driver) as client:
            assert client.get("/console/").status_code == 401
