"""Jarvis names itself by URL (issue 47 item 3): where a server's authorization server takes Client ID Metadata
Documents, Jarvis's client id is its own document, `<public URL>/oauth/downstream/client.json`, with no setting: the
authorization server fetches it from that URL and finds Jarvis's callback in it, and no client is registered.

The public URL is the configured one (`aggregator_url`, here `http://localhost:<port>`), never the Host a request
came with (the test reaches Jarvis at 127.0.0.1); a loopback one counts where tests allow loopback
(JARVIS_DOWNSTREAM_OAUTH_ALLOW_LOOPBACK), an https one always (tests/unit/downstream/test_client_id_url.py).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator

import httpx2
import pytest

from tests.support.downstream import create_profile
from tests.support.oauth_downstream import ProtectedServer, Variant, consent_in_browser, protected_server
from tests.support.stack import RunningJarvis, free_port, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio

LINK = re.compile(r"(http://\S+/oauth/downstream/start\?flow=[\w-]+)")


@pytest.fixture(scope="module")
def jarvis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    env = {"HOME": str(tmp_path_factory.mktemp("home")), "JARVIS_DOWNSTREAM_OAUTH_ALLOW_LOOPBACK": "true"}
    running = start_jarvis(tmp_path_factory.mktemp("oauth-cimd"), env=env, port=free_port())
    yield running
    running.stop()


def public(jarvis: RunningJarvis) -> str:
    return f"http://localhost:{jarvis.port}"


async def install(jarvis: RunningJarvis, name: str, server: ProtectedServer) -> None:
    async with mcp_client(jarvis.url()) as admin:
        await admin.call_tool("jarvis_config", {"action": "set", "key": "aggregator_url", "value": public(jarvis)})
        current = result_json(await admin.call_tool("jarvis_config", {"action": "get", "key": "servers.oauth"}))
        merged = sorted({*current["value"], name})
        result_json(await admin.call_tool("jarvis_config", {"action": "set", "key": "servers.oauth", "value": merged}))
        create = {"action": "create", "name": name, "type": "streamable-http", "url": server.url}
        result_json(await admin.call_tool("jarvis_server", create))
        await create_profile(admin, name, name)


async def whoami(jarvis: RunningJarvis, name: str) -> tuple[bool, str]:
    async with mcp_client(jarvis.url(f"/mcp/profile/{name}")) as client:
        result = await client.call_tool(f"{name}__whoami", {})
    return bool(result.is_error), str(getattr(result.content[0], "text", ""))


@pytest.mark.parametrize("registration", [False, True], ids=["cimd-only", "cimd-and-registration"])
async def test_jarvis_names_itself_by_its_document(jarvis: RunningJarvis, registration: bool) -> None:
    name = "cimd-registering" if registration else "cimd-only"
    with protected_server(variant=Variant(cimd=True, cimd_fetch=True, registration=registration)) as server:
        await install(jarvis, name, server)
        failed, text = await whoami(jarvis, name)
        assert failed, text
        link = LINK.search(text)
        assert link is not None, text
        await asyncio.to_thread(consent_in_browser, link.group(1), "ada")
        assert await whoami(jarvis, name) == (False, "ada")
        document_url = public(jarvis) + "/oauth/downstream/client.json"
        assert list(server.accounts.clients) == [document_url]  # the URL is the client: nothing was registered
        assert server.accounts.documents == [httpx2.get(document_url.replace("localhost", "127.0.0.1")).json()]
        assert server.accounts.documents[0]["redirect_uris"] == [public(jarvis) + "/oauth/downstream/callback"]


async def test_the_document_names_the_configured_url_whatever_the_host(jarvis: RunningJarvis) -> None:
    async with mcp_client(jarvis.url()) as admin:
        await admin.call_tool("jarvis_config", {"action": "set", "key": "aggregator_url", "value": public(jarvis)})
    document = httpx2.get(jarvis.url("/oauth/downstream/client.json"), headers={"host": "evil.example"}).json()
    assert document["client_id"] == public(jarvis) + "/oauth/downstream/client.json"
    assert document["redirect_uris"] == [public(jarvis) + "/oauth/downstream/callback"]
