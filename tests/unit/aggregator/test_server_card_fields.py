"""Server cards (decision 0064): what a card says, from the configured public URL and never the request's Host."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from mcp.server import Server
from mcp_types.version import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION
from starlette.applications import Starlette
from starlette.testclient import TestClient

from jarvis.aggregator.downstream.proxy.shares import Shares
from jarvis.aggregator.downstream.proxy.surface import ProxySurface
from jarvis.aggregator.surfaces.cards import MEDIA_TYPE, SCHEMA, CardAuth, ServerCards, namespace
from jarvis.aggregator.tooling.tool import Surface

PUBLIC = "https://jarvis.example.com/"


async def _public() -> str:
    return PUBLIC


async def _no_tools(ctx: Any, params: Any) -> Any:
    raise AssertionError("a card lists no tools")


class _Host:
    def __init__(self) -> None:
        self.rereads = 0

    async def refresh_after_miss(self) -> None:
        self.rereads += 1


def _proxy(names: set[str], host: _Host) -> ProxySurface:
    return cast(ProxySurface, SimpleNamespace(exists=names.__contains__, host=host, server=Server("jarvis-profile")))


def _client(auth: CardAuth, shared: set[str]) -> tuple[TestClient, _Host]:
    async def active(name: str) -> Any:
        return object() if name in shared else None

    host = _Host()
    cards = ServerCards(_public, "1.2.3", auth)
    own = Surface(name="jarvis", path="/mcp/jarvis", tools=[], instructions="Manage Jarvis.")
    routes = cards.routes(
        [(own, Server("jarvis-jarvis", on_list_tools=_no_tools))],
        _proxy({"work"}, host),
        _proxy({"time", "git"}, host),
        cast(Shares, SimpleNamespace(active=active)),
    )
    return TestClient(Starlette(routes=routes), base_url="http://evil.example.net"), host


def test_a_surface_card_follows_the_public_url_and_names_no_tools() -> None:
    client, _ = _client(CardAuth(True, "/.well-known/oauth-protected-resource", True), set())
    answer = client.get("/mcp/jarvis/server-card", headers={"Host": "evil.example.net"})
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith(MEDIA_TYPE)
    assert "max-age=" in answer.headers["cache-control"]
    assert answer.headers["access-control-allow-origin"] == "*"
    card = answer.json()
    assert card["$schema"] == SCHEMA
    assert card["name"] == "com.example.jarvis/jarvis-jarvis"
    assert card["version"] == "1.2.3"
    assert 0 < len(card["description"]) <= 100
    [remote] = card["remotes"]
    assert remote["type"] == "streamable-http"
    assert remote["url"] == "https://jarvis.example.com/mcp/jarvis"
    assert {LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION} <= set(remote["supportedProtocolVersions"])
    assert remote["headers"][0]["name"] == "Authorization"
    auth = card["_meta"]["jarvis/authorization"]
    assert auth == {
        "required": True,
        "schemes": ["bearer"],
        "resourceMetadata": "https://jarvis.example.com/.well-known/oauth-protected-resource/mcp/jarvis",
        "authorizationServers": ["https://jarvis.example.com"],
    }
    assert "evil" not in answer.text
    assert "tools" not in card  # capabilities in summary only, under _meta
    assert card["_meta"]["jarvis/capabilities"] == {"tools": {"listChanged": False}}


def test_an_open_loopback_card_asks_for_no_token() -> None:
    client, _ = _client(CardAuth(False, None, False), set())
    card = client.get("/mcp/jarvis/server-card").json()
    assert card["_meta"]["jarvis/authorization"] == {"required": False}
    assert "headers" not in card["remotes"][0]


def test_a_profile_card_exists_only_for_a_profile_and_names_no_server() -> None:
    client, host = _client(CardAuth(False, None, False), set())
    card = client.get("/mcp/profile/work/server-card").json()
    assert card["remotes"][0]["url"] == "https://jarvis.example.com/mcp/profile/work"
    assert card["name"] == "com.example.jarvis/jarvis-profile-work"
    missing = client.get("/mcp/profile/nope/server-card")
    assert missing.status_code == 404
    assert missing.headers["cache-control"] == "no-store"
    assert host.rereads == 1  # a profile made on another replica a moment ago is looked for once


def test_a_share_card_exists_only_while_shared_and_always_takes_a_token() -> None:
    client, _ = _client(CardAuth(False, None, False), {"time"})
    card = client.get("/share/time/mcp/server-card").json()
    assert card["remotes"][0]["url"] == "https://jarvis.example.com/share/time/mcp"
    assert card["_meta"]["jarvis/authorization"]["required"] is True
    assert client.get("/share/git/mcp/server-card").status_code == 404  # installed, not shared


def test_the_namespace_is_the_public_host_reversed() -> None:
    assert namespace("https://jarvis.example.com") == "com.example.jarvis"
    assert namespace("http://127.0.0.1:8080") == "127.0.0.1"
    assert namespace("http://localhost:8080/") == "localhost"
