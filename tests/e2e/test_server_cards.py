"""Server cards (issue 47 item 6, decision 0064) through a real `jarvis up --require-auth`: each surface and profile
describes itself at `<its MCP URL>/server-card` without a token, from the configured public URL (a spoofed Host
changes nothing), a missing profile has none, and a profile's card names none of its servers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from tests.support.downstream import FAST_ENV, create_profile, create_toy, eventually
from tests.support.stack import RunningJarvis, mcp_client, start_jarvis

pytestmark = pytest.mark.anyio

PUBLIC = "https://cards.example.test"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    running = start_jarvis(
        tmp_path_factory.mktemp("data"),
        "--require-auth",
        env={"HOME": str(tmp_path_factory.mktemp("home")), **FAST_ENV},
    )
    yield running
    running.stop()


def card(running: RunningJarvis, path: str) -> httpx2.Response:
    # No token, and a Host naming someone else: the card must still name the configured URL.
    return httpx2.get(
        running.url(path + "/server-card"),
        headers={"Host": "evil.example.net", "Accept": "application/mcp-server+json"},
        timeout=10,
    )


async def test_cards_describe_each_surface_and_profile_from_the_public_url(secured: RunningJarvis) -> None:
    admin = secured.create_token("admin", name="cards")
    async with mcp_client(secured.url(), admin) as jarvis:
        await jarvis.call_tool("jarvis_config", {"action": "set", "key": "aggregator_url", "value": PUBLIC})
        await create_toy(jarvis, "cardtoy")
        await create_profile(jarvis, "cardprofile", "cardtoy")

    async def public() -> Any:
        answer = card(secured, "/mcp")
        return answer.status_code == 200 and answer.json()["remotes"][0]["url"] == PUBLIC + "/mcp" and answer

    discovery = await eventually(public, what="the discovery card names the configured URL")
    assert discovery.headers["content-type"].startswith("application/mcp-server+json")
    assert "max-age=" in discovery.headers["cache-control"]

    for path in ("/mcp", "/mcp/jarvis", "/mcp/profile/cardprofile"):
        answer = card(secured, path)
        assert answer.status_code == 200, (path, answer.text)
        body = answer.json()
        assert body["$schema"].endswith("/server-card.schema.json")
        assert body["name"].startswith("test.example.cards/"), body["name"]
        assert body["version"]
        assert body["title"]
        assert 0 < len(body["description"]) <= 100
        [remote] = body["remotes"]
        assert remote == {**remote, "type": "streamable-http", "url": PUBLIC + path}
        assert {"2025-11-25", "2026-07-28"} <= set(remote["supportedProtocolVersions"])
        auth = body["_meta"]["jarvis/authorization"]
        assert auth["required"] is True
        assert auth["resourceMetadata"] == f"{PUBLIC}/.well-known/oauth-protected-resource{path}"
        assert "tools" in body["_meta"]["jarvis/capabilities"]
        assert "tools" not in body
        assert "evil" not in answer.text
        assert "127.0.0.1" not in answer.text
        assert "cardtoy" not in answer.text  # a profile's card names none of its servers

    missing = card(secured, "/mcp/profile/no-such-profile")
    assert missing.status_code == 404
    assert card(secured, "/share/cardtoy/mcp").status_code == 404  # installed, but not shared
