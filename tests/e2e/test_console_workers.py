"""The console across `jarvis up --workers 2` (issue 49): one one-time link is printed, not one per worker; the
session it opens in Chromium is known to both workers (it is kept in the registry), and Sign out ends it on both."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from selenium.webdriver.common.by import By

from tests.support.console import COOKIE, LINK, chromium, printed_link, session_cookie, wait_for
from tests.support.redis_server import redis_url
from tests.support.stack import RunningJarvis, start_jarvis

FRESH = httpx2.Limits(max_keepalive_connections=0)  # each request on a connection of its own: either worker answers


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    with redis_url(tmp_path_factory.mktemp("redis")) as redis:
        env = {"HOME": str(tmp_path_factory.mktemp("home")), "JARVIS_REDIS_URL": redis}
        running = start_jarvis(tmp_path_factory.mktemp("console-workers"), "--workers", "2", env=env)
        try:
            yield running
        finally:
            running.stop()


def test_a_session_holds_on_every_worker(workers: RunningJarvis, tmp_path: Path) -> None:
    link = printed_link(workers)
    with httpx2.Client(limits=FRESH) as http:
        pids: set[int] = set()

        def both_answer() -> bool:
            pids.update(http.get(workers.url("/livez")).json()["pid"] for _ in range(10))
            return len(pids) == 2

        wait_for(both_answer, "both workers answering on the one port", timeout=60)
    assert len(LINK.findall(workers.log())) == 1, "one worker prints the link"

    with chromium(tmp_path) as (driver, shot):
        driver.get(link)
        wait_for(lambda: driver.current_url == workers.url("/console/"), "the console")
        shot("signed-in")
        cookie = {COOKIE: str(session_cookie(driver)["value"])}
        with httpx2.Client(base_url=workers.base_url, cookies=cookie, limits=FRESH, timeout=30) as http:
            assert {http.get("/console/tokens").status_code for _ in range(20)} == {200}
            driver.find_element(By.CSS_SELECTOR, "form.logout button").click()
            wait_for(lambda: not driver.find_elements(By.ID, "who"), "the signed-out page")
            shot("signed-out")
            assert {http.get("/console/tokens").status_code for _ in range(20)} == {401}
