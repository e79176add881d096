"""Active sets (memory and a real Redis), caller visibility, and stateless session ids."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import pytest

from jarvis.aggregator.discovery.access import visible_to
from jarvis.aggregator.discovery.entry import ToolEntry
from jarvis.aggregator.discovery.session_ids import StatelessSessionIds
from jarvis.aggregator.discovery.sessions import ActiveSets, MemoryActiveSets, RedisActiveSets, session_key
from jarvis.aggregator.tooling.principal import LOCAL_ADMIN, Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.common.errors import Unavailable
from jarvis.common.scopes import allows, reaches_surface
from tests.support.redis_server import redis_url

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_url(tmp_path_factory.mktemp("redis")) as url:
        yield url


async def _exercise(sets: ActiveSets, key: str) -> None:
    assert await sets.get(key) == []
    assert await sets.add(key, ["b", "a", "b"]) == ["b", "a"]
    assert await sets.add(key, ["c", "a"]) == ["b", "a", "c"]  # an active tool keeps its place
    assert await sets.get(key) == ["b", "a", "c"]
    assert await sets.get(key + "-other") == []


async def test_memory_active_sets_keep_load_order() -> None:
    await _exercise(MemoryActiveSets(), "k")


async def test_memory_active_sets_expire_and_are_bounded() -> None:
    sets = MemoryActiveSets(ttl=-1)
    await sets.add("k", ["a"])
    assert await sets.get("k") == []
    bounded = MemoryActiveSets(max_sessions=2)
    for key in ("a", "b", "c"):
        await bounded.add(key, ["t"])
    assert await bounded.get("a") == []
    assert await bounded.get("c") == ["t"]


async def test_redis_active_sets_are_shared_by_clients(redis: str) -> None:
    first, second = RedisActiveSets(redis), RedisActiveSets(redis)
    key = session_key("token", "session-for-unit-test")
    try:
        await _exercise(first, key)
        assert await second.get(key) == ["b", "a", "c"]
    finally:
        await first.close()
        await second.close()


async def test_unreachable_redis_is_an_actionable_error() -> None:
    from tests.support.stack import free_port

    sets = RedisActiveSets(f"redis://127.0.0.1:{free_port()}/0")
    try:
        with pytest.raises(Unavailable) as exc:
            await sets.get("k")
    finally:
        await sets.close()
    assert "tool_call works without loading" in str(exc.value)


def test_session_keys_bind_token_and_session() -> None:
    assert session_key("a", "s") != session_key("b", "s")
    assert session_key("a", "s") == session_key("a", "s")
    assert "s" not in session_key("a", "s")


async def _noop(_: dict[str, Any], __: Principal) -> Any:
    return None


def test_visibility_follows_scopes() -> None:
    tool = Tool(
        name="jarvis_server",
        description="Servers list|install",
        actions=[Action("list", _noop, read_only=True), Action("install", _noop, admin=True)],
    )
    admin_only = Tool(name="jarvis_system", description="System", actions=[Action("restart", _noop, admin=True)])
    routes = {"jarvis_server": ("jarvis", tool), "jarvis_system": ("jarvis", admin_only)}
    entries = [ToolEntry(name=n, description="", source="jarvis", kind="surface", tool=n) for n in routes]
    downstream = ToolEntry(
        name="github__create_issue", description="", source="github", kind="server", tool="create_issue"
    )

    def seen(*scopes: str) -> set[str]:
        allowed = visible_to(Principal("t", "t", scopes), routes.get)
        return {e.name for e in [*entries, downstream] if allowed(e)}

    assert seen("read") == {"jarvis_server"}
    assert seen("jarvis:jarvis_server:list") == {"jarvis_server"}
    assert seen("jarvis") == {"jarvis_server"}  # admin actions need admin
    assert seen("servers:github") == {"github__create_issue"}
    assert seen("servers:github:create_issue") == {"github__create_issue"}
    assert seen("servers:gitlab", "orchestrator") == set()
    assert seen("admin") == {"jarvis_server", "jarvis_system", "github__create_issue"}
    assert visible_to(LOCAL_ADMIN, routes.get)(downstream)


def test_the_discovery_surface_is_open_to_every_token() -> None:
    assert reaches_surface(["jarvis:read"], "discovery")
    assert allows(["orchestrator"], "discovery", "tool_find", None, read_only=True)
    assert not allows(["orchestrator"], "discovery", "tool_find", None, read_only=True, admin=True)


async def _asgi(
    middleware: StatelessSessionIds, method: str, headers: list[tuple[bytes, bytes]]
) -> tuple[int, dict[bytes, bytes]]:
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": "/mcp", "headers": headers}
    await middleware(scope, receive, send)
    start = sent[0]
    return start["status"], dict(start.get("headers", []))


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b"{}"})


async def test_stateless_session_ids_are_minted_kept_and_validated() -> None:
    middleware = StatelessSessionIds(_app, {"/mcp"})  # type: ignore[arg-type]
    status, headers = await _asgi(middleware, "POST", [])
    assert status == 200
    assert len(headers[b"mcp-session-id"]) == 32
    _, kept = await _asgi(middleware, "POST", [(b"mcp-session-id", b"abcdef0123456789")])
    assert kept[b"mcp-session-id"] == b"abcdef0123456789"
    _, replaced = await _asgi(middleware, "POST", [(b"mcp-session-id", b"bad id!")])
    assert replaced[b"mcp-session-id"] != b"bad id!"
    status, _ = await _asgi(middleware, "GET", [])
    assert status == 405


def test_redis_helper_fails_loudly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(AssertionError, match="need Redis"), redis_url(tmp_path):
        pass
