"""The admin's live pages and the env edit form (issue 49), in real headless Chromium against `jarvis up` with
sign-in: the Servers page shows a server installed, started and uninstalled by another client over MCP without a
reload; the Audit page shows a new call its filter matches and not one it does not; the streams refuse bob (403) and
a signed-out browser (401) and resume after Last-Event-ID without repeating an entry; and alice sets a server's env
from the page, which the real downstream server then reports, while the page never holds a stored value. With two
workers, every stream shows the calls and installs either worker served. Screenshots are in each test's tmp dir."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.e2e.test_console_admin import csrf_of, jarvis
from tests.e2e.test_console_workers import FRESH, workers
from tests.support.console import COOKIE, Shots, as_browser, chromium, printed_link, sign_in_at_provider, wait_for
from tests.support.downstream import create_profile, create_toy, eventually, reference, text_of
from tests.support.stack import RunningJarvis, mcp_client, result_json

pytestmark = pytest.mark.anyio
__all__ = ["jarvis", "workers"]  # fixtures (alice an admin and bob a person; two workers), registered by being here

PROFILE = "/mcp/profile/live"
SECRET = "s3cret-never-on-a-page"  # steady's stored value of TOY_SECRET
NEW_NAME = "renamed-by-the-console"  # the value alice types for TOY_NAME
Event = dict[str, str]


@pytest.fixture(scope="module")
async def servers(jarvis: RunningJarvis) -> str:
    """Toys `steady` (with a secret in its env) and `other` in profile `live`, both called once; an admin token."""
    admin = jarvis.create_token("admin", name="live-setup")
    async with mcp_client(jarvis.url(), admin) as client:
        await create_toy(client, "steady", TOY_SECRET=SECRET)
        await create_toy(client, "other")
        await create_profile(client, "live", "steady", "other")
    async with mcp_client(jarvis.url(PROFILE), admin) as client:
        for tool in ("steady__echo", "other__echo"):
            assert not (await client.call_tool(tool, {"text": "warm"})).is_error
    return admin


async def call(jarvis: RunningJarvis, token: str, tool: str, path: str = PROFILE, **arguments: Any) -> Any:
    async with mcp_client(jarvis.url(path), token) as client:
        result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    return result


@contextmanager
def alice_at(jarvis: RunningJarvis, page: str, tmp_path: Path) -> Iterator[tuple[WebDriver, Shots]]:
    """alice, the admin, signed in and at `page`."""
    with chromium(tmp_path) as (alice, shot):
        sign_in_at_provider(alice, jarvis, "alice")
        alice.get(jarvis.url(page))
        yield alice, shot


def same_page(driver: WebDriver) -> Callable[[], bool]:
    """Whether the browser still shows the page it shows now (a reload is another document)."""
    origin = driver.execute_script("return window.performance.timeOrigin")
    return lambda: driver.execute_script("return window.performance.timeOrigin") == origin


def cell(driver: WebDriver, server: str, name: str) -> str:
    found = driver.find_elements(By.CSS_SELECTOR, f"#server-{server} .{name}")
    return str(found[0].text) if found else ""


def audit_rows(driver: WebDriver) -> list[tuple[str, str]]:
    return [
        (str(r.get_attribute("id")), str(r.text)) for r in driver.find_elements(By.CSS_SELECTOR, "#audit tbody tr[id]")
    ]


def events_of(answer: httpx2.Response) -> Iterator[Event]:
    """A server-sent events stream's events, as they come."""
    current: Event = {}
    for line in answer.iter_lines():
        if line:
            key, _, value = line.partition(":")
            value = value.removeprefix(" ")
            current[key] = f"{current[key]}\n{value}" if key == "data" and key in current else value
        elif current:
            yield current
            current = {}


def read_events(
    client: httpx2.Client, path: str, enough: Callable[[list[Event]], bool], headers: dict[str, str] | None = None
) -> list[Event]:
    """The stream's events until `enough` says so (its read times out after 30 s of nothing)."""
    events: list[Event] = []
    with client.stream("GET", path, headers=headers or {}, timeout=30) as answer:
        assert answer.status_code == 200, answer.read()
        assert answer.headers["content-type"].startswith("text/event-stream")
        for event in events_of(answer):
            events.append(event)
            if enough(events):
                return events
    raise AssertionError(f"the stream ended: {events}")


def row_ids(events: list[Event]) -> list[str]:
    return [m for e in events if e.get("event") == "row" for m in re.findall(r'<tr id="(audit-\d+)"', e["data"])]


async def test_the_servers_page_follows_installs_starts_and_uninstalls(
    jarvis: RunningJarvis, servers: str, tmp_path: Path
) -> None:
    with alice_at(jarvis, "/console/admin/servers", tmp_path) as (alice, shot):
        assert cell(alice, "steady", "state") == "running"
        assert not alice.find_elements(By.ID, "server-newcomer")
        unchanged = same_page(alice)
        shot("servers-before")

        # Another client installs a server: its row joins the open page.
        async with mcp_client(jarvis.url(), servers) as client:
            await create_toy(client, "newcomer", "exit")  # dies before initialize: it fails when started
        wait_for(lambda: alice.find_elements(By.ID, "server-newcomer"), "newcomer's row, live")
        shot("servers-installed-live")
        # Started (a restart), it fails: the page shows the state and the error as the tool reports them.
        await call(jarvis, servers, "server", "/mcp/admin", action="restart", name="newcomer")
        listed = result_json(await call(jarvis, servers, "jarvis_server", "/mcp/jarvis", action="list"))
        newcomer = next(s for s in listed["servers"] if s["name"] == "newcomer")
        assert newcomer["status"] != "running", newcomer
        wait_for(lambda: cell(alice, "newcomer", "state") == newcomer["status"], f"newcomer {newcomer['status']}")
        wait_for(lambda: cell(alice, "newcomer", "last-error") != "", "newcomer's last error, live")
        shot("servers-failed-live")
        # Uninstalled by the other client: the row goes.
        await call(jarvis, servers, "jarvis_server", "/mcp/jarvis", action="uninstall", name="newcomer")
        wait_for(lambda: not alice.find_elements(By.ID, "server-newcomer"), "newcomer's row gone, live")
        shot("servers-uninstalled-live")
        assert unchanged(), "the page was reloaded"
        assert cell(alice, "steady", "state") == "running"
        # The live row is the page's own: its Restart form works.
        alice.find_element(By.CSS_SELECTOR, "#server-steady button").click()
        wait_for(lambda: alice.find_elements(By.ID, "note"), "the restart's answer")
        assert alice.find_element(By.ID, "note").text == "steady: running"


async def test_the_audit_page_shows_new_matching_calls(jarvis: RunningJarvis, servers: str, tmp_path: Path) -> None:
    # (By tool: the page's own `audit` call, which names server=steady, is in the log too, and would match.)
    with alice_at(jarvis, "/console/admin/audit?tool=steady__echo&outcome=ok", tmp_path) as (alice, shot):
        before = audit_rows(alice)
        assert before
        assert all("steady__echo" in text for _, text in before), before
        unchanged = same_page(alice)
        # Calls the filter does not match (another server, a failed call), then one it does.
        await call(jarvis, servers, "other__echo", text="not this one")
        async with mcp_client(jarvis.url(PROFILE), servers) as client:
            assert (await client.call_tool("steady__fail", {})).is_error
        await call(jarvis, servers, "steady__echo", text="this one")
        wait_for(lambda: len(audit_rows(alice)) > len(before), "the new call on top, live")
        shot("audit-live")
        rows = audit_rows(alice)
        assert rows[1:] == before, rows  # one row more, on top; none twice
        assert "steady__echo" in rows[0][1], rows[0]
        assert " ok " in f" {rows[0][1]} ", rows[0]
        assert not any("other" in text or "fail" in text for _, text in rows), rows
        assert unchanged(), "the page was reloaded"


async def test_the_streams_are_an_admins_and_resume_without_repeating(
    jarvis: RunningJarvis, servers: str, tmp_path: Path
) -> None:
    streams = ("/console/admin/servers/events", "/console/admin/audit/events")
    with chromium(tmp_path / "bob") as (bob, _), chromium(tmp_path / "alice") as (alice, _):
        sign_in_at_provider(bob, jarvis, "bob")
        sign_in_at_provider(alice, jarvis, "alice")
        with as_browser(jarvis, bob) as client:
            for stream in streams:
                refused = client.get(stream)
                assert refused.status_code == 403, stream
                assert "steady" not in refused.text
        for stream in streams:
            assert httpx2.get(jarvis.url(stream), timeout=30).status_code == 401, stream

        with as_browser(jarvis, alice) as client:
            # A page whose rows are not the server's gets them all; one that names the rows it has gets only changes.
            first = read_events(client, streams[0] + "?after=stale", lambda events: bool(events))
            assert first[0]["event"] == "rows", first
            assert 'id="server-steady"' in first[0]["data"], first
            assert "csrf" in first[0]["data"]  # the rows' own Restart forms
            resume = {"last-event-id": first[0]["id"]}
            with client.stream("GET", streams[0], headers=resume, timeout=4) as quiet:
                assert quiet.status_code == 200
                with pytest.raises(httpx2.ReadTimeout):  # nothing changed: nothing is sent
                    quiet.read()

            # The audit tail, from an entry on: two matching calls arrive, each once; resumed from the last event's
            # id, the stream sends the next call only.
            path = f"{streams[1]}?tool=steady__echo"
            start = read_events(client, f"{path}&after=0", lambda e: bool(row_ids(e)) and "id" in e[-1])
            cursor = start[-1]["id"]  # the stream's id: the log's newest entry when it sent these
            for text in ("one", "two"):
                await call(jarvis, servers, "steady__echo", text=text)
            got = read_events(client, f"{path}&after={cursor}", lambda e: len(row_ids(e)) >= 2 and "id" in e[-1])
            assert len(row_ids(got)) == len(set(row_ids(got))) == 2, got
            last = [e["id"] for e in got if "id" in e][-1]
            await call(jarvis, servers, "steady__echo", text="three")
            resumed = read_events(client, path, lambda events: bool(row_ids(events)), {"last-event-id": last})
            assert len(row_ids(resumed)) == 1, resumed
            assert not set(row_ids(resumed)) & set(row_ids(got)), resumed
            assert "steady__echo" in resumed[0]["data"]


def test_a_stream_ends_when_its_admin_is_disabled(jarvis: RunningJarvis, servers: str, tmp_path: Path) -> None:
    """The streams look at their person's standing again (every 10 s): carol, disabled, is sent `end`."""
    jarvis.cli("role", "set", "carols", "--user", "carol@example.test", "--scope", "admin")
    with chromium(tmp_path) as (carol, shot):
        sign_in_at_provider(carol, jarvis, "carol")
        carol.get(jarvis.url("/console/admin/servers"))
        shot("carol-servers")
        with as_browser(jarvis, carol) as client:
            with client.stream("GET", "/console/admin/audit/events?tool=none-such", timeout=40) as answer:
                assert answer.status_code == 200  # an admin's stream, open
                jarvis.cli("user", "disable", "carol@example.test")
                ended = next(e for e in events_of(answer) if e.get("event") in ("end", "failed"))
            assert ended["event"] == "end", ended
            assert "no longer an admin" in ended["data"]
            assert client.get("/console/admin/audit/events").status_code == 401  # and no stream opens again


async def whoami(jarvis: RunningJarvis, token: str) -> dict[str, Any]:
    async with mcp_client(jarvis.url(PROFILE), token) as client:
        result = await client.call_tool("steady__whoami", {})
    return dict(json.loads(text_of(result))) if not result.is_error else {}


async def env_shown(jarvis: RunningJarvis, token: str) -> dict[str, str]:
    info = result_json(await call(jarvis, token, "jarvis_server", "/mcp/jarvis", action="info", name="steady"))
    return dict(info["launch"]["env"])


async def test_the_admin_sets_env_from_the_page_and_no_value_reaches_it(
    jarvis: RunningJarvis, servers: str, tmp_path: Path
) -> None:
    with alice_at(jarvis, "/console/admin/servers?server=steady", tmp_path) as (alice, shot):
        form = alice.find_element(By.ID, "edit")
        names = [str(label.text) for label in form.find_elements(By.CSS_SELECTOR, "tbody th label")]
        assert {"TOY_NAME", "TOY_SECRET"} <= set(names), names
        assert SECRET not in alice.page_source
        shot("edit-form")
        form.find_element(By.NAME, "env:TOY_NAME").send_keys(NEW_NAME)
        form.find_element(By.ID, "save-env").click()
        wait_for(lambda: alice.find_elements(By.ID, "note"), "the edit's answer")
        shot("edit-saved")
        assert alice.find_element(By.ID, "note").text.startswith("Saved steady's environment")
        assert NEW_NAME not in alice.page_source
        assert SECRET not in alice.page_source
        # The downstream server, restarted with its new launch, has the new value; the secret is still set.
        await eventually(lambda: _named(jarvis, servers, NEW_NAME), timeout=30, what="steady reports the new name")
        assert (await env_shown(jarvis, servers))["TOY_SECRET"] == "<set>"

        # Empty fields keep their values; a new variable is added, then removed.
        alice.get(jarvis.url("/console/admin/servers?server=steady"))
        alice.find_element(By.ID, "new-env-name").send_keys("TOY_EXTRA")
        alice.find_element(By.ID, "new-env-value").send_keys("extra")
        alice.find_element(By.ID, "save-env").click()
        wait_for(lambda: alice.find_elements(By.ID, "note"), "the second edit's answer")
        assert set(await env_shown(jarvis, servers)) >= {"TOY_NAME", "TOY_SECRET", "TOY_EXTRA"}
        alice.get(jarvis.url("/console/admin/servers?server=steady"))
        assert "extra" not in str(alice.find_element(By.ID, "edit").get_attribute("innerHTML")).replace("TOY_EXTRA", "")
        alice.find_element(By.CSS_SELECTOR, "input[name=unset_env][value=TOY_EXTRA]").click()
        alice.find_element(By.ID, "save-env").click()
        wait_for(lambda: alice.find_elements(By.ID, "note"), "the removal's answer")
        shot("edit-removed")
        shown = await env_shown(jarvis, servers)
        assert "TOY_EXTRA" not in shown, shown
        assert shown["TOY_SECRET"] == "<set>", shown
        await eventually(lambda: _named(jarvis, servers, NEW_NAME), timeout=30, what="TOY_NAME kept")

        # A post from another origin changes nothing, even with the session's token.
        with as_browser(jarvis, alice) as client:
            csrf = csrf_of(client.get("/console/admin/servers").text)
            forged = client.post(
                "/console/admin/servers/edit",
                data={"csrf": csrf, "name": "steady", "env:TOY_NAME": "forged", "unset_env": "TOY_SECRET"},
                headers={"origin": "http://evil.example"},
            )
        assert forged.status_code == 403
        assert (await env_shown(jarvis, servers)) == shown
        assert (await whoami(jarvis, servers))["name"] == NEW_NAME


async def _named(jarvis: RunningJarvis, token: str, name: str) -> bool:
    return (await whoami(jarvis, token)).get("name") == name


async def test_every_workers_stream_sees_every_workers_changes(workers: RunningJarvis) -> None:
    """Six streams of each kind, each on a connection of its own (the kernel spreads them over both workers), and
    six calls, each on a connection of its own too: every stream shows every call, and the server they installed."""
    with httpx2.Client(base_url=workers.base_url, limits=FRESH, timeout=30) as http:
        signed_in = http.get(printed_link(workers).removeprefix(workers.base_url))
        assert signed_in.status_code == 303
        cookie = {COOKIE: signed_in.cookies[COOKIE]}
        pids: set[int] = set()

        def both_answer() -> bool:
            pids.update(http.get("/livez").json()["pid"] for _ in range(10))
            return len(pids) == 2

        wait_for(both_answer, "both workers answering on the one port", timeout=60)
    async with mcp_client(workers.url()) as client:
        await create_toy(client, "spread")
        await create_profile(client, "spread", "spread")

    def tail(_: int) -> list[Event]:
        with httpx2.Client(base_url=workers.base_url, cookies=cookie, limits=FRESH) as client:
            path = "/console/admin/audit/events?tool=spread__echo"
            return read_events(client, path, lambda events: len(row_ids(events)) >= 6)

    def rows(_: int) -> list[Event]:
        with httpx2.Client(base_url=workers.base_url, cookies=cookie, limits=FRESH) as client:
            page = client.get("/console/admin/servers").text  # the digest of the rows a page shows now
            digest = re.findall(r"servers/events\?after=(\w+)", page)[0]
            path = f"/console/admin/servers/events?after={digest}"
            return read_events(
                client, path, lambda events: any('id="server-later"' in e.get("data", "") for e in events)
            )

    with ThreadPoolExecutor(12) as pool:
        tails = [pool.submit(tail, n) for n in range(6)]
        servers = [pool.submit(rows, n) for n in range(6)]
        await asyncio.sleep(3)  # the streams are open
        for n in range(6):
            async with mcp_client(workers.url("/mcp/profile/spread")) as client:
                assert not (await client.call_tool("spread__echo", {"text": f"call {n}"})).is_error
        async with mcp_client(workers.url()) as client:
            await create_toy(client, "later")
        seen = [sorted(row_ids(f.result(timeout=60))) for f in tails]
        assert all(len(set(ids)) == len(ids) == 6 for ids in seen), seen
        assert all(ids == seen[0] for ids in seen), seen  # the same six calls, once each, on every stream
        assert all(f.result(timeout=60) for f in servers)


async def test_the_admin_sets_a_remote_servers_header_from_the_page(
    jarvis: RunningJarvis, servers: str, tmp_path: Path
) -> None:
    """A streamable-HTTP server's headers, edited as its env is: added, replaced, removed; the real server (the SDK's,
    recording what each request carried) receives each value, and no page holds one."""
    record = tmp_path / "requests.jsonl"
    first, second = "team-key-one", "team-key-two"

    async def keys_received() -> list[str | None]:
        await call(jarvis, servers, "remote__test_simple_text", "/mcp/profile/remote")
        calls = [json.loads(line) for line in record.read_text().splitlines()]
        return [c.get("teamKey") for c in calls if c["method"] == "tools/call"]

    with reference(record) as url, alice_at(jarvis, "/console/admin/servers", tmp_path) as (alice, shot):
        async with mcp_client(jarvis.url(), servers) as client:
            create = {"action": "create", "name": "remote", "type": "streamable-http", "url": url}
            result_json(await client.call_tool("jarvis_server", create))
            await create_profile(client, "remote", "remote")
        assert (await keys_received())[-1] is None

        def save(*fields: tuple[str, str]) -> None:
            alice.get(jarvis.url("/console/admin/servers?server=remote"))
            for name, value in fields:
                alice.find_element(By.CSS_SELECTOR, f'#edit-headers input[name="{name}"]').send_keys(value)
            alice.find_element(By.ID, "save-headers").click()
            wait_for(lambda: alice.find_elements(By.ID, "note"), "the edit's answer")

        def tick(name: str) -> None:
            alice.get(jarvis.url("/console/admin/servers?server=remote"))
            alice.find_element(By.CSS_SELECTOR, f'input[name=unset_header][value="{name}"]').click()
            alice.find_element(By.ID, "save-headers").click()
            wait_for(lambda: alice.find_elements(By.ID, "note"), "the removal's answer")

        save(("new_header_name", "X-Team-Key"), ("new_header_value", first))
        shot("header-added")
        assert alice.find_element(By.ID, "note").text.startswith("Saved remote's headers: X-Team-Key: <set>")
        await eventually(lambda: _last_is(keys_received, first), timeout=30, what="the server gets the header")
        save(("header:X-Team-Key", second))
        assert first not in alice.page_source
        assert second not in alice.page_source
        await eventually(lambda: _last_is(keys_received, second), timeout=30, what="the server gets the new value")
        tick("X-Team-Key")
        shot("header-removed")
        await eventually(lambda: _last_is(keys_received, None), timeout=30, what="the header gone")


async def _last_is(received: Callable[[], Any], value: str | None) -> bool:
    return bool((await received())[-1] == value)
