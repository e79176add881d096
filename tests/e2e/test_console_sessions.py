"""My sessions (issue 49, browser test 4): the local admin, signed in by the one-time link, opens an agent session's
page in headless Chromium and watches its output arrive live over server-sent events (the fake agent in a real container
on the test Docker engine), then ends it from the page. Screenshots are in the test's tmp dir."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import httpx2
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.e2e.orchestrator.conftest import jarvis_with_runtime, source
from tests.support.console import Shots, as_browser, local_admin, wait_for
from tests.support.stack import RunningJarvis, mcp_client, result_json

pytestmark = pytest.mark.anyio
__all__ = ["source"]  # a fixture, registered by being here


@pytest.fixture(scope="module")
def jarvis(
    tmp_path_factory: pytest.TempPathFactory, image: str, engine: docker.DockerClient
) -> Iterator[RunningJarvis]:
    with jarvis_with_runtime(tmp_path_factory, image, engine, "console-sessions") as running:
        yield running


@pytest.fixture(scope="module")
def browser(jarvis: RunningJarvis, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WebDriver, Shots]]:
    with local_admin(jarvis, tmp_path_factory.mktemp("browser")) as signed_in:
        yield signed_in


async def call(jarvis: RunningJarvis, tool: str, **arguments: Any) -> Any:
    async with mcp_client(jarvis.url("/mcp/orchestrator")) as client:
        return result_json(await client.call_tool(tool, arguments))


def output_lines(driver: Any) -> list[str]:
    return [str(e.text) for e in driver.find_elements(By.CSS_SELECTOR, "#output > div")]


async def test_a_sessions_output_arrives_live_and_the_page_ends_it(
    jarvis: RunningJarvis, browser: tuple[WebDriver, Shots], source: Path
) -> None:
    project = (await call(jarvis, "project", action="create", name="watched", source_url=str(source)))["created"]
    session = (await call(jarvis, "session", action="spawn", project_id=project["id"], prompt="hello"))["session"]
    driver, shot = browser
    driver.get(jarvis.url("/console/"))
    driver.find_element(By.LINK_TEXT, "My sessions").click()
    shot("sessions")
    row = driver.find_element(By.ID, f"session-{session['id']}")
    assert row.find_element(By.CLASS_NAME, "state").text == "running"
    row.find_element(By.TAG_NAME, "a").click()
    wait_for(lambda: any("echo: hello" in line for line in output_lines(driver)), "the answer to the prompt")
    before = len(output_lines(driver))
    shot("session-first-answer")

    # A message sent by someone else (an agent, over MCP) shows on the open page without a reload: the stream.
    page_id = driver.execute_script("return window.performance.timeOrigin")
    await call(jarvis, "session", action="message", project_id=project["id"], session_id=session["id"], message="again")
    wait_for(lambda: any("echo: again" in line for line in output_lines(driver)), "the live answer", timeout=60)
    assert driver.execute_script("return window.performance.timeOrigin") == page_id  # the same page, not reloaded
    assert len(output_lines(driver)) > before
    seqs = [int(e.get_attribute("data-seq") or 0) for e in driver.find_elements(By.CSS_SELECTOR, "#output > div")]
    assert seqs == sorted(set(seqs)), seqs  # each event once, in order, across the page and the stream
    shot("session-live")

    driver.find_element(By.ID, "end").click()
    wait_for(lambda: driver.find_elements(By.ID, "note"), "the end's answer")
    shot("session-ended")
    assert re.search(r"Session \S+: (ended|exited)\.", driver.find_element(By.ID, "note").text)
    got = await call(jarvis, "session", action="get", project_id=project["id"], session_id=session["id"])
    assert got["state"] != "running"


async def test_the_stream_resumes_after_the_last_event_and_ends_with_the_session(
    jarvis: RunningJarvis, browser: tuple[WebDriver, Shots], source: Path
) -> None:
    """A browser that reconnects sends the last event's id: the stream goes on after it. A finished session's stream
    sends what is left and says how it ended."""
    project = (await call(jarvis, "project", action="create", name="resumed", source_url=str(source)))["created"]
    pid = project["id"]
    sid = (await call(jarvis, "session", action="spawn", project_id=pid, prompt="exit 0"))["session"]["id"]
    events = f"/console/sessions/{pid}/{sid}/events"
    with as_browser(jarvis, browser[0]) as client:
        whole = client.get(events, timeout=60)
        assert whole.headers["content-type"].startswith("text/event-stream")
        ids = [int(i) for i in re.findall(r"^id: (\d+)$", whole.text, re.M)]
        assert ids, whole.text
        assert ids == list(range(1, len(ids) + 1)), whole.text
        assert re.search(r"^event: end\ndata: (exited|ended)$", whole.text, re.M), whole.text
        resumed = client.get(events, headers={"last-event-id": str(ids[0])}, timeout=60)
        assert [int(i) for i in re.findall(r"^id: (\d+)$", resumed.text, re.M)] == ids[1:]
    outsider = httpx2.get(jarvis.url(events), timeout=30)
    assert outsider.status_code == 401  # no console session: no stream
