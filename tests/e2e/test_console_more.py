"""My schedules, and the admin's Profiles and Usage pages (issue 49), in headless Chromium against `jarvis up` with its
scheduler and runtime (the fake agent in real containers on the test Docker engine), as the local admin signed in by
the one-time link. Each page's figures are checked against what the MCP tools say. Screenshots are in the test's tmp
dir."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from tests.e2e.orchestrator.conftest import jarvis_with_runtime, source
from tests.support.console import Shots, local_admin, wait_for
from tests.support.downstream import create_profile, create_toy
from tests.support.stack import RunningJarvis, mcp_client, result_json

pytestmark = pytest.mark.anyio
__all__ = ["source"]  # a fixture, registered by being here


@pytest.fixture(scope="module")
def jarvis(
    tmp_path_factory: pytest.TempPathFactory, image: str, engine: docker.DockerClient
) -> Iterator[RunningJarvis]:
    with jarvis_with_runtime(tmp_path_factory, image, engine, "console-more") as running:
        yield running


@pytest.fixture(scope="module")
def browser(jarvis: RunningJarvis, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WebDriver, Shots]]:
    with local_admin(jarvis, tmp_path_factory.mktemp("browser")) as signed_in:
        yield signed_in


async def call(jarvis: RunningJarvis, path: str, tool: str, **arguments: Any) -> Any:
    async with mcp_client(jarvis.url(path)) as client:
        return result_json(await client.call_tool(tool, arguments))


def row(driver: WebDriver, element_id: str) -> WebElement:
    return driver.find_element(By.ID, element_id)


def figures(driver: WebDriver, table: str, name: str) -> tuple[int, int]:
    """A usage table's calls and errors for one row, by its name."""
    found = driver.find_element(By.CSS_SELECTOR, f'#{table} tr[data-name="{name}"]')
    return int(found.find_element(By.CLASS_NAME, "calls").text), int(found.find_element(By.CLASS_NAME, "errors").text)


async def test_a_schedule_disabled_and_triggered_from_the_page(
    jarvis: RunningJarvis, browser: tuple[WebDriver, Shots], source: Path
) -> None:
    """Disable on the page is `schedule action=update enabled=false` for every client; Trigger now starts a run that
    then shows among the schedule's last runs, with the outcome the tool reports."""
    project = await call(
        jarvis, "/mcp/orchestrator", "project", action="create", name="nightly", source_url=str(source)
    )
    pid = project["created"]["id"]
    made = {"cron": "0 3 * * *", "prompt": "exit 0", "targets": [pid], "name": "nightly-build"}
    schedule = (await call(jarvis, "/mcp/orchestrator", "schedule", action="create", **made))["created"]["schedule"]
    sid = schedule["id"]
    driver, shot = browser
    driver.get(jarvis.url("/console/"))
    driver.find_element(By.LINK_TEXT, "My schedules").click()
    shot("schedules")
    assert row(driver, f"schedule-{sid}").find_element(By.CLASS_NAME, "state").text == "enabled"
    assert row(driver, f"schedule-{sid}").find_elements(By.CSS_SELECTOR, ".next time")

    row(driver, f"schedule-{sid}").find_element(By.CLASS_NAME, "trigger").click()
    wait_for(lambda: driver.find_elements(By.ID, "note"), "the trigger's answer")  # the form's page, once loaded
    assert driver.find_element(By.ID, "note").text == f"Schedule {sid} triggered: 1 run queued."
    got = await call(jarvis, "/mcp/orchestrator", "schedule", action="get", schedule_id=sid)
    assert len(got["recent_runs"]) == 1
    run = got["recent_runs"][0]
    assert run["trigger"] != "cron"
    assert run["target"] == pid
    shown = row(driver, f"run-{run['id']}")  # the triggered run, on the page that triggered it
    # Queued or running, or already over: the fake agent exits at once, and the run may end before the page renders.
    assert shown.find_element(By.CLASS_NAME, "outcome").text in ("queued", "running", "succeeded", "failed")

    row(driver, f"schedule-{sid}").find_element(By.CLASS_NAME, "switch").click()
    wait_for(lambda: any("disabled" in e.text for e in driver.find_elements(By.ID, "note")), "the disable's answer")
    shot("schedule-disabled")
    assert driver.find_element(By.ID, "note").text == "Schedule nightly-build is disabled."
    assert row(driver, f"schedule-{sid}").find_element(By.CLASS_NAME, "state").text == "disabled"
    assert row(driver, f"schedule-{sid}").find_element(By.CLASS_NAME, "next").text == "none"
    got = await call(jarvis, "/mcp/orchestrator", "schedule", action="get", schedule_id=sid)
    assert got["schedule"]["enabled"] is False
    assert got["next_fires"] == []

    # The run goes on to its end in the runtime (the fake agent exits at once); the page shows the tool's outcome.
    def settled() -> bool:
        driver.get(jarvis.url("/console/schedules"))
        return row(driver, f"run-{run['id']}").find_element(By.CLASS_NAME, "outcome").text in ("succeeded", "failed")

    wait_for(settled, "the triggered run's outcome", timeout=120)
    got = await call(jarvis, "/mcp/orchestrator", "schedule", action="get", schedule_id=sid)
    outcome = row(driver, f"run-{run['id']}").find_element(By.CLASS_NAME, "outcome").text
    assert outcome == next(r["state"] for r in got["recent_runs"] if r["id"] == run["id"])
    shot("schedule-ran")

    row(driver, f"schedule-{sid}").find_element(By.CLASS_NAME, "switch").click()
    wait_for(lambda: any("enabled" in e.text for e in driver.find_elements(By.ID, "note")), "the enable's answer")
    assert row(driver, f"schedule-{sid}").find_element(By.CLASS_NAME, "state").text == "enabled"
    got = await call(jarvis, "/mcp/orchestrator", "schedule", action="get", schedule_id=sid)
    assert got["schedule"]["enabled"] is True
    assert got["next_fires"]


async def test_the_profiles_page_shows_each_profiles_members(
    jarvis: RunningJarvis, browser: tuple[WebDriver, Shots]
) -> None:
    async with mcp_client(jarvis.url()) as client:
        for name in ("left", "right"):
            await create_toy(client, name)
        await create_profile(client, "pair", "left", "right")
        await create_profile(client, "solo", "right")
    driver, shot = browser
    driver.get(jarvis.url("/console/"))
    driver.find_element(By.LINK_TEXT, "Profiles").click()
    shot("profiles")

    def members(profile: str) -> list[str]:
        return [li.text for li in row(driver, f"profile-{profile}").find_elements(By.CSS_SELECTOR, ".members li")]

    assert members("pair") == ["left", "right"]
    assert members("solo") == ["right"]
    await call(jarvis, "/mcp/jarvis", "jarvis_profile", action="edit", name="pair", remove=["left"])
    driver.refresh()
    assert members("pair") == ["right"]
    link = row(driver, "profile-solo").find_element(By.LINK_TEXT, "right")
    assert link.get_attribute("href") == jarvis.url("/console/admin/servers?server=right")  # the member's details


async def test_the_usage_page_counts_the_calls_made(jarvis: RunningJarvis, browser: tuple[WebDriver, Shots]) -> None:
    """Three good calls and two failing ones to a server nobody else calls, and two failing calls of a Jarvis action
    no page makes: the page's figures are those, in the last hours' tables and in the registry's totals."""
    async with mcp_client(jarvis.url()) as client:
        await create_toy(client, "counted")
        await create_profile(client, "counting", "counted")
    async with mcp_client(jarvis.url("/mcp/profile/counting")) as client:
        for text in ("a", "b", "c"):
            assert not (await client.call_tool("counted__echo", {"text": text})).is_error
        for _ in range(2):
            assert (await client.call_tool("counted__fail", {})).is_error
    async with mcp_client(jarvis.url()) as client:
        for _ in range(2):
            assert (await client.call_tool("jarvis_server", {"action": "info", "name": "no-such-server"})).is_error
    driver, shot = browser
    driver.get(jarvis.url("/console/"))
    driver.find_element(By.LINK_TEXT, "Usage").click()
    shot("usage")
    assert figures(driver, "servers", "counted") == (5, 2)
    assert figures(driver, "tools", "counted__echo") == (3, 0)
    assert figures(driver, "tools", "counted__fail") == (2, 2)
    assert figures(driver, "tools", "jarvis_server info") == (2, 2)
    assert figures(driver, "totals", "counted__echo") == (3, 0)
    assert figures(driver, "totals", "jarvis_server info") == (2, 2)
    hours = driver.find_elements(By.CSS_SELECTOR, "#hours tbody tr")
    assert len(hours) == 24
    assert sum(int(h.find_element(By.CLASS_NAME, "calls").text) for h in hours) >= 7
    # The charts are drawn from the same numbers: a bar per hour, labelled for screen readers.
    bars = driver.find_elements(By.CSS_SELECTOR, "svg rect.calls title")
    assert any(b.get_attribute("textContent") == "counted__echo: 3 calls" for b in bars)
    assert driver.find_element(By.CSS_SELECTOR, "svg[role=img] title").get_attribute("textContent")
    assert not driver.find_elements(By.TAG_NAME, "script")
