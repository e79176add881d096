"""Each person's consent across `jarvis up --workers 2` (issue 32): the call that needs it, the link, and the
authorization server's return each come on a connection of their own, so each lands on either worker; the worker
that began the consent answers its link and its return wherever they land (downstream/auth/relay.py, over Redis),
and every person ends up connected as themselves. A 2026-07-28 caller's retry, which may reach the other worker,
waits there for the consent the first one holds."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client

from tests.support.downstream import create_profile, eventually
from tests.support.oauth_downstream import ProtectedServer, consent_in_browser, protected_server
from tests.support.redis_server import redis_url
from tests.support.stack import RunningJarvis, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio

LINK = re.compile(r"(http://\S+/oauth/downstream/start\?flow=[\w-]+)")
PEOPLE = ("ann", "ben", "cay", "dee", "eli")


@pytest.fixture(scope="module")
def notes() -> Iterator[ProtectedServer]:
    with protected_server() as server:
        yield server


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    with redis_url(tmp_path_factory.mktemp("redis")) as redis:
        env = {
            "HOME": str(tmp_path_factory.mktemp("home")),
            "JARVIS_REDIS_URL": redis,
            "JARVIS_DOWNSTREAM_OAUTH_ALLOW_HOSTS": '["localhost"]',
            "JARVIS_AGGREGATOR_DOWNSTREAM_WATCH_SECONDS": "0.5",
        }
        running = start_jarvis(tmp_path_factory.mktemp("oauth-workers"), "--require-auth", "--workers", "2", env=env)
        yield running
        running.stop()
        print(running.log()[-6000:])


async def notes_installed(workers: RunningJarvis, notes: ProtectedServer) -> None:
    """The OAuth-protected `notes` server and its profile, installed once for the module's tests."""
    async with mcp_client(workers.url(), workers.create_token("admin", name="admin")) as jarvis:
        listed = result_json(await jarvis.call_tool("jarvis_server", {"action": "list"}))
        if "notes" in {s["name"] for s in listed["servers"]}:
            return
        server = {"action": "create", "name": "notes", "type": "streamable-http", "url": notes.url}
        result_json(await jarvis.call_tool("jarvis_server", server))
        oauth = {"action": "set", "key": "servers.oauth", "value": ["notes"]}
        result_json(await jarvis.call_tool("jarvis_config", oauth))
        await create_profile(jarvis, "notes", "notes")


async def whoami(jarvis: RunningJarvis, token: str) -> tuple[bool, str]:
    async with mcp_client(jarvis.url("/mcp/profile/notes"), token) as client:
        result = await client.call_tool("notes__whoami", {})
    return bool(result.is_error), str(getattr(result.content[0], "text", ""))


async def test_every_person_connects_whichever_worker_takes_each_step(
    workers: RunningJarvis, notes: ProtectedServer
) -> None:
    async def both_answer() -> bool:
        async with httpx2.AsyncClient(limits=httpx2.Limits(max_keepalive_connections=0)) as http:
            return len({(await http.get(workers.url("/livez"))).json()["pid"] for _ in range(40)}) == 2

    await eventually(both_answer, 60, "both workers answering on the one port")
    await notes_installed(workers, notes)
    for person in PEOPLE:
        token = workers.create_token("admin", name=person)
        failed, text = await whoami(workers, token)
        link = LINK.search(text)
        assert failed, text
        assert link is not None, text
        browser = await asyncio.to_thread(consent_in_browser, link.group(1), person, fresh_connections=True)
        browser.close()
        assert await whoami(workers, token) == (False, person)


async def test_a_2026_retry_on_the_other_worker_waits_for_the_consent(
    workers: RunningJarvis, notes: ProtectedServer
) -> None:
    """Each person's 2026-07-28 client accepts the input request at once and finishes the consent in the browser a
    moment later; every request goes on a connection of its own, so the retry often reaches the worker that does not
    hold the consent. It waits there for the holder's consent and answers, each person asked once."""

    await notes_installed(workers, notes)

    async def served() -> bool:
        listed = await whoami(workers, workers.create_token("admin", name="probe"))
        return "needs your authorization" in listed[1]

    for _ in range(4):  # by both workers: each probe's connection lands on either
        await eventually(served, 60, "the notes profile served")
    for person in ("fay", "gus", "hal", "ivy", "jo"):
        result, asked = await accept_then_consent(workers, person)
        assert (result.is_error, getattr(result.content[0], "text", "")) == (False, person), result.content
        assert len(asked) == 1, asked


async def accept_then_consent(workers: RunningJarvis, person: str) -> tuple[types.CallToolResult, list[str]]:
    """`person`'s `notes__whoami` from a 2026-07-28 client on a fresh connection per request that accepts Jarvis's
    input request at once and consents in the browser a second later; the result and the links it was asked with."""
    token = workers.create_token("admin", name=person)
    asked: list[str] = []
    consenting: list[asyncio.Task[httpx2.Client]] = []

    async def later(url: str) -> httpx2.Client:
        await asyncio.sleep(1.0)  # after the retry has gone out
        return await asyncio.to_thread(consent_in_browser, url, person, fresh_connections=True)

    async def accept(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams), params
        asked.append(params.url)
        consenting.append(asyncio.create_task(later(params.url)))
        return types.ElicitResult(action="accept")

    limits = httpx2.Limits(max_keepalive_connections=0)
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60, limits=limits) as http,
        Client(
            streamable_http_client(workers.url("/mcp/profile/notes"), http_client=http),
            mode="2026-07-28",
            elicitation_callback=accept,
        ) as client,
    ):
        result = await client.call_tool("notes__whoami", {})
    for task in consenting:
        (await task).close()
    return result, asked
