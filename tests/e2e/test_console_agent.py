"""Issue 49, browser test 4 with a real agent: alice, signed in through the team's provider (oidc-provider at its
defaults), starts a session of the real Claude Code, in the real agent image, from My sessions in headless Chromium.
Its output (the scripted fake of the Anthropic Messages API, reached only through the runtime's egress proxy) arrives
on the session page over server-sent events without a reload; the page then shows the file the agent wrote among the
workspace's changes, and ends the session. Screenshots are in the test's tmp dir."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import docker
import pytest
from selenium.webdriver.common.by import By

from tests.e2e.test_agents_act_for_someone import URL, call, result
from tests.e2e.test_real_agent import jarvis_env
from tests.support import anthropic_fake
from tests.support.anthropic_fake import AnthropicFake
from tests.support.console import chromium, sign_in_at_provider, wait_for
from tests.support.docker_env import remove_managed
from tests.support.http_fake import serve_app
from tests.support.per_person_oauth import signed_in
from tests.support.real_agent import API_HOST, KEY, require_agent_image, source_repo
from tests.support.signin import signin_jarvis


def test_she_starts_claude_code_from_the_page_and_watches_it_work(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, engine: docker.DockerClient
) -> None:
    require_agent_image(engine)
    fake = AnthropicFake()
    with serve_app(fake.app()) as url, signin_jarvis(tmp_path_factory, env=jarvis_env(tmp_path / "home")) as jarvis:
        port = int(url.rsplit(":", 1)[1])
        try:
            jarvis.cli("role", "set", "developers", "--group", "dev", "--scope", "jarvis", "--scope", "orchestrator")
            # Her project, made by her own client (its sign-in): the page then offers her to start its sessions.
            alice = signed_in(jarvis, "alice", URL, "orchestrator")
            create: dict[str, Any] = {"action": "create", "name": "console-claude", "agent": "claude"}
            create |= {"source_url": str(source_repo(tmp_path / "src")), "egress_allow": [f"{API_HOST}:{port}"]}
            project = result(call(jarvis, alice, "project", create))["created"]["id"]
            for name, value in (("ANTHROPIC_API_KEY", KEY), ("ANTHROPIC_BASE_URL", f"http://{API_HOST}:{port}")):
                secret = {"action": "secret_set", "project_id": project, "name": name, "value": value}
                result(call(jarvis, alice, "project", secret))

            with chromium(tmp_path / "browser") as (driver, shot):
                sign_in_at_provider(driver, jarvis, "alice")
                driver.find_element(By.LINK_TEXT, "My sessions").click()
                driver.find_element(By.ID, f"prompt-{project}").send_keys("Write HELLO.md, please.")
                shot("start")
                driver.find_element(By.ID, f"start-{project}").click()
                wait_for(lambda: "/console/sessions/" in driver.current_url, "the new session's page", timeout=60)
                page = driver.execute_script("return window.performance.timeOrigin")

                def output() -> str:
                    return " ".join(str(e.text) for e in driver.find_elements(By.CSS_SELECTOR, "#output > div"))

                wait_for(lambda: anthropic_fake.FINAL in output(), "Claude Code's answer on the open page", timeout=180)
                shot("answered")
                assert driver.execute_script("return window.performance.timeOrigin") == page  # no reload
                # The file it wrote, among its workspace's changes; then the page ends the session.
                driver.refresh()
                shot("changes")
                status = driver.find_element(By.ID, "changes-status").text
                assert f"?? {anthropic_fake.FILE}" in status, status
                assert KEY not in driver.page_source
                driver.find_element(By.ID, "end").click()
                wait_for(lambda: driver.find_elements(By.ID, "note"), "the end's answer")
                shot("ended")
                assert re.search(r"Session \S+: (ended|exited)\.", driver.find_element(By.ID, "note").text)
        finally:
            remove_managed(engine, jarvis.data_dir)
    assert fake.keys() == {KEY}
