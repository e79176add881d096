"""A person's own tokens (issue 49, decision 0071), in real headless Chromium against `jarvis up` with sign-in through
oidc-provider at its defaults: alice (group dev, role `jarvis`, no admin) signs in, makes a token on Connect a client
for Claude Code, and the real Claude Code, given the command the page shows, lists Jarvis as Connected. The token acts
for her and for no one else: the audit names her, it may do no more than her roles allow now, bob neither sees nor
revokes it, and it stops when she is disabled. Screenshots are in each test's tmp dir."""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.support.agent_clients import client_env, mcp_list
from tests.support.console import as_browser, chromium, sign_in_at_provider, wait_for
from tests.support.downstream import eventually
from tests.support.signin import signin_jarvis
from tests.support.stack import RunningJarvis, mcp_client

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def jarvis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    """Roles at the fixture's defaults: group dev (alice) gets `jarvis`, group ops (bob) only the status check."""
    with signin_jarvis(tmp_path_factory) as running:
        yield running


def claude_code_command(driver: WebDriver) -> str:
    configs = [e.get_attribute("textContent") or "" for e in driver.find_elements(By.CSS_SELECTOR, "pre.config")]
    return next(c for c in configs if c.startswith("claude mcp add --transport http jarvis "))


def callers(jarvis: RunningJarvis) -> set[str]:
    """Whom the audit log names for status checks."""
    exported = jarvis.cli("audit", "export", "--tool", "jarvis_check_status").stdout.splitlines()
    return {json.loads(line)["token_name"] for line in exported}


def tokens(jarvis: RunningJarvis) -> dict[str, dict[str, object]]:
    return {t["name"]: t for t in json.loads(jarvis.cli("token", "list", "--json").stdout)}


async def status_answer(jarvis: RunningJarvis, secret: str) -> str:
    async with mcp_client(jarvis.url(), secret) as client:
        result = await client.call_tool("jarvis_check_status", {})
        return "".join(getattr(block, "text", "") for block in result.content)


def test_alice_makes_a_token_on_connect_and_claude_code_connects_with_it(jarvis: RunningJarvis, tmp_path: Path) -> None:
    """Issue 49, browser tests 1 and 3: the config she copies works in the real client, and the secret is shown once."""
    with chromium(tmp_path) as (driver, shot):
        sign_in_at_provider(driver, jarvis, "alice")
        before = claude_code_command(driver)
        assert "Authorization" not in before  # a client that signs in needs no token
        driver.find_element(By.ID, "token-jarvis").click()
        wait_for(lambda: driver.find_elements(By.ID, "made-jarvis"), "the token's configs")
        shot("alice-connect-with-token")
        command = claude_code_command(driver)
        secret = command.split("Bearer ")[1].split('"')[0]
        assert secret.startswith("jv_")

        # The real Claude Code, as a fresh user pasting the command into a terminal.
        home = tmp_path / "home"
        home.mkdir()
        subprocess.run(
            shlex.split(command), cwd=home, env=client_env(home), check=True, capture_output=True, timeout=120
        )
        listed = mcp_list("claude", home, home)
        assert "jarvis:" in listed
        assert "Connected" in listed.split("jarvis:")[1].splitlines()[0], listed

        # Shown once: My tokens lists it as hers, without the secret; Connect offers a new one, not the old.
        driver.get(jarvis.url("/console/tokens"))
        shot("alice-tokens")
        assert driver.find_element(By.XPATH, "//tr[th[text()='jarvis config']]")
        assert secret not in driver.page_source
        driver.get(jarvis.url("/console/"))
        assert secret not in driver.page_source
    assert "jarvis config" in jarvis.cli("token", "list").stdout


async def test_a_persons_token_acts_for_them_and_no_more(jarvis: RunningJarvis, tmp_path: Path) -> None:
    with chromium(tmp_path / "alice") as (alice, shot), chromium(tmp_path / "bob") as (bob, bob_shot):
        sign_in_at_provider(alice, jarvis, "alice")
        alice.get(jarvis.url("/console/tokens"))
        offered = [e.get_attribute("value") for e in alice.find_elements(By.CSS_SELECTOR, "input[type=checkbox]")]
        assert offered == ["jarvis"]  # her own scopes, nothing she does not hold
        alice.find_element(By.ID, "name").send_keys("alice-ci")
        alice.find_element(By.CSS_SELECTOR, "input[name=scope][value=jarvis]").click()
        alice.find_element(By.ID, "create").click()
        wait_for(lambda: alice.find_elements(By.ID, "secret"), "the secret")
        secret = alice.find_element(By.ID, "secret").text
        made = tokens(jarvis)["alice-ci"]
        assert made["owner"]  # her subject at the provider
        with as_browser(jarvis, alice) as client:
            page = client.get("/console/tokens").text
            csrf = page.split('name="csrf" value="')[1].split('"')[0]
            # More than she holds is refused, as the token tool's denied call.
            asked = client.post(
                "/console/tokens",
                data={"csrf": csrf, "name": "alice-more", "scope": "orchestrator"},
                headers={"origin": jarvis.base_url},
            )
            assert asked.status_code == 400
            assert "you do not hold orchestrator" in asked.text

        # It acts for her: the status check answers, and the audit log names her by the token.
        assert "registry" in await status_answer(jarvis, secret)
        wait_for(lambda: "alice@example.test via token alice-ci" in callers(jarvis), "her call in the audit")
        # bob's page lists none of hers, and his revoke of it finds nothing.
        sign_in_at_provider(bob, jarvis, "bob")
        bob.get(jarvis.url("/console/tokens"))
        bob_shot("bob-tokens")
        assert "alice-ci" not in bob.page_source
        with as_browser(jarvis, bob) as client:
            page = client.get("/console/tokens").text
            csrf = page.split('name="csrf" value="')[1].split('"')[0]
            revoked = client.post(
                "/console/tokens/revoke",
                data={"csrf": csrf, "id": made["id"]},
                headers={"origin": jarvis.base_url},
            )
            assert revoked.status_code == 400
        assert "registry" in await status_answer(jarvis, secret)
        assert "alice-ci" in tokens(jarvis)  # the listing leaves revoked tokens out

        # Her role narrowed, the token narrows with it; disabled, it speaks for no one.
        jarvis.cli("role", "set", "developers", "--group", "dev", "--scope", "jarvis:jarvis_server")
        try:

            async def refused() -> bool:
                return "jarvis:jarvis_check_status" in await status_answer(jarvis, secret)

            await eventually(refused, timeout=20, what="the token narrowed with her role")
        finally:
            jarvis.cli("role", "set", "developers", "--group", "dev", "--scope", "jarvis")
        jarvis.cli("user", "disable", "alice@example.test")
        try:
            wait_for(lambda: _status_code(jarvis, secret) == 401, "her disabled token refused", timeout=20)
            shot("alice-after")
        finally:
            jarvis.cli("user", "enable", "alice@example.test")


def _status_code(jarvis: RunningJarvis, secret: str) -> int:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    headers = {"authorization": f"Bearer {secret}", "accept": "application/json, text/event-stream"}
    return httpx2.post(jarvis.url(), json=initialize, headers=headers, timeout=30).status_code
