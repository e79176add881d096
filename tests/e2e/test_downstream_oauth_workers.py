"""Each person's consent across `jarvis up --workers 2` (issue 32): the call that needs it, the link, and the
authorization server's return each come on a connection of their own, so each lands on either worker; the worker
that began the consent answers its link and its return wherever they land (downstream/auth/relay.py, over Redis),
and every person ends up connected as themselves."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator

import httpx2
import pytest

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
    admin = workers.create_token("admin", name="admin")
    async with mcp_client(workers.url(), admin) as jarvis:
        server = {"action": "create", "name": "notes", "type": "streamable-http", "url": notes.url}
        result_json(await jarvis.call_tool("jarvis_server", server))
        oauth = {"action": "set", "key": "servers.oauth", "value": ["notes"]}
        result_json(await jarvis.call_tool("jarvis_config", oauth))
        await create_profile(jarvis, "notes", "notes")
    for person in PEOPLE:
        token = workers.create_token("admin", name=person)
        failed, text = await whoami(workers, token)
        link = LINK.search(text)
        assert failed, text
        assert link is not None, text
        browser = await asyncio.to_thread(consent_in_browser, link.group(1), person, fresh_connections=True)
        browser.close()
        assert await whoami(workers, token) == (False, person)
