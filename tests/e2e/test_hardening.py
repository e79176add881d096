"""Attacks on a running, token-requiring `jarvis up` (issue 15), each over real HTTP or a real MCP client.

Deep JSON nesting, session-owner eviction, scope denials an agent cannot read, unbounded call
rates, and a small fuzz of every surface.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx2
import pytest

from tests.support.downstream import FAST_ENV, create_profile, create_toy, text_of
from tests.support.fuzz import Report, downstream_surfaces, fixed_cases, fuzz, mutated_cases
from tests.support.stack import RunningJarvis, error_text, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "attack", "version": "1"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
SESSION_CAP = 3
LIMITS = {"jarvis_config": {"per_second": 0.2, "burst": 2}, "hard__slow": {"concurrent": 1}}


@pytest.fixture(scope="module")
def hardened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    home = tmp_path_factory.mktemp("home")
    running = start_jarvis(
        tmp_path_factory.mktemp("hardened"),
        "--require-auth",
        env={
            **FAST_ENV,
            "HOME": str(home),
            "JARVIS_AGGREGATOR_MAX_SESSIONS_PER_TOKEN": str(SESSION_CAP),
            "JARVIS_AGGREGATOR_RATE_LIMIT_TOOLS": json.dumps(LIMITS),
        },
    )
    yield running
    running.stop()


@pytest.fixture(scope="module")
def admin_token(hardened: RunningJarvis) -> str:
    return hardened.create_token("admin", name="admin")


@pytest.fixture(scope="module")
def downstream(hardened: RunningJarvis, admin_token: str) -> dict[str, str | None]:
    """A toy server with a profile `hard`, and the fuzz's profile and share; their paths → their tokens."""

    async def setup() -> dict[str, str | None]:
        async with mcp_client(hardened.url(), admin_token) as admin:
            await create_toy(admin, "hard")
            await create_profile(admin, "hard", "hard")
        return await downstream_surfaces(hardened.url(), hardened.base_url, admin_token)

    return asyncio.run(setup())


def post(
    running: RunningJarvis, body: bytes | object, headers: dict[str, str] | None = None, path: str = "/mcp/jarvis"
) -> httpx2.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx2.post(running.url(path), content=content, headers={**MCP_HEADERS, **(headers or {})}, timeout=30)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _messages(error: BaseException) -> str:
    """The text of an exception and of every exception grouped in it (task groups wrap the SDK's errors)."""
    nested = getattr(error, "exceptions", ())
    return " | ".join([str(error), *(_messages(e) for e in nested)])


def test_deep_nesting_is_a_parse_error_on_every_surface(
    hardened: RunningJarvis, downstream: dict[str, str | None]
) -> None:
    """Issue 15 #5: 2 KB of nesting gave 500 and a RecursionError traceback, before authentication."""
    paths = ["/mcp", "/mcp/jarvis", "/mcp/debug", "/mcp/orchestrator", "/mcp/profile/hard", "/share/fuzztoy/mcp"]
    bodies = [b"[" * 1000 + b"]" * 1000, b'{"a":' * 1000 + b"1" + b"}" * 1000, b"[" * 65 + b"]" * 65]
    for path in paths:
        for body in bodies:
            answer = post(hardened, body, path=path)  # no token: refused before anything parses it deeper
            assert answer.status_code == 400, (path, answer.status_code, answer.text)
            assert answer.json()["error"]["code"] == -32700
            assert "nested deeper than 64" in answer.json()["error"]["message"]
    # Nesting within the bound still reaches authentication, and strings full of brackets are not nesting.
    assert post(hardened, b"[" * 64 + b"]" * 64).status_code == 401
    assert post(hardened, json.dumps({"text": "[" * 5000}).encode()).status_code == 401
    assert "Traceback" not in hardened.log()


async def test_sessions_end_with_their_owner_entry_and_are_capped_per_token(hardened: RunningJarvis) -> None:
    """Issue 15 #7: owner entries outlived their sessions in a 20,000-entry table, so churn evicted live ones."""
    owner, other = hardened.create_token("jarvis", name="owner"), hardened.create_token("jarvis", name="other")
    # Open and delete far more sessions than the cap: each DELETE frees its entry.
    for _ in range(SESSION_CAP * 4):
        opened = post(hardened, INITIALIZE, bearer(owner))
        assert opened.status_code == 200, opened.text
        session = opened.headers["mcp-session-id"]
        closed = httpx2.delete(
            hardened.url(),
            headers={**bearer(owner), "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"},
            timeout=10,
        )
        assert closed.status_code == 200
    live = [post(hardened, INITIALIZE, bearer(owner)).headers["mcp-session-id"] for _ in range(SESSION_CAP)]
    refused = post(hardened, INITIALIZE, bearer(owner))
    assert refused.status_code == 429
    assert f"already has {SESSION_CAP} open MCP sessions" in refused.json()["error"]["message"]
    # Another token is not held back by this one's sessions, and cannot use them.
    assert post(hardened, INITIALIZE, bearer(other)).status_code == 200
    listing = {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}
    session_headers = {"mcp-session-id": live[0], "mcp-protocol-version": "2025-11-25"}
    assert post(hardened, listing, {**bearer(other), **session_headers}).status_code == 403
    assert post(hardened, listing, {**bearer(owner), **session_headers}).status_code == 200
    # The owner's client, through the SDK, is told why it cannot open one more.
    with pytest.raises(BaseException) as raised:  # noqa: PT011 - the SDK's error, possibly in a task group
        async with mcp_client(hardened.url(), owner) as client:
            await client.list_tools()
    assert "open MCP sessions" in _messages(raised.value)
    for session in live:
        httpx2.delete(
            hardened.url(), headers={**bearer(owner), **session_headers, "mcp-session-id": session}, timeout=10
        )
    async with mcp_client(hardened.url(), owner) as client:
        # A `jarvis` token sees every tool but jarvis_system, whose every action needs `admin`.
        names = {t.name for t in (await client.list_tools()).tools}
        assert "jarvis_system" not in names
        assert len(names) == 7, names


async def test_scope_denials_reach_the_agent_as_tool_errors(
    hardened: RunningJarvis, admin_token: str, downstream: dict[str, str | None]
) -> None:
    """A 403 body is dropped by SDK clients (-32603 "Server returned an error response"): the agent never
    learned which scope it lacked."""
    token = hardened.create_token("jarvis:jarvis_server:list", "profile:hard:hard__echo", name="narrow")
    async with mcp_client(hardened.url(), token) as client:
        denied = await client.call_tool("jarvis_server", {"action": "uninstall", "name": "hard"})
        text = error_text(denied)
        assert "jarvis_server action=uninstall" in text
        assert "jarvis:jarvis_server:uninstall" in text
        assert denied.structured_content == {"error": "insufficient_scope"}
        result_json(await client.call_tool("jarvis_server", {"action": "list"}))
    async with mcp_client(hardened.url("/mcp/profile/hard"), token) as client:
        assert text_of(await client.call_tool("hard__echo", {"text": "hi"})) == "hi"
        denied = await client.call_tool("hard__whoami", {})
        assert "profile:hard:hard__whoami" in error_text(denied)
        assert "servers:hard:whoami" in error_text(denied)
    async with mcp_client(hardened.url(), admin_token) as admin:  # the denied call never ran
        assert "hard" in {
            s["name"] for s in result_json(await admin.call_tool("jarvis_server", {"action": "list"}))["servers"]
        }
    # A token that cannot reach the surface at all is still refused at the transport: 403.
    assert post(hardened, INITIALIZE, bearer(hardened.create_token("orchestrator"))).status_code == 403


async def test_rate_limits_per_token_and_tool_with_a_retry_hint(
    hardened: RunningJarvis, downstream: dict[str, str | None]
) -> None:
    first, second = hardened.create_token("jarvis", name="fast"), hardened.create_token("jarvis", name="other")
    async with mcp_client(hardened.url(), first) as client:
        for _ in range(2):  # the burst
            result_json(await client.call_tool("jarvis_config", {"action": "list"}))
        limited = await client.call_tool("jarvis_config", {"action": "list"})
        assert "rate limited" in error_text(limited)
        detail = limited.structured_content
        assert detail is not None
        assert detail["error"] == "rate_limited"
        assert detail["reason"] == "rate"
        assert 0 < detail["retry_after"] <= 5
        # Other tools of the same token, and the same tool for another token, are not held back.
        result_json(await client.call_tool("jarvis_server", {"action": "list"}))
    async with mcp_client(hardened.url(), second) as client:
        result_json(await client.call_tool("jarvis_config", {"action": "list"}))
    # Under --require-auth /metrics needs a token of scope `metrics` (tests/e2e/test_metrics_token.py).
    metrics = httpx2.get(hardened.url("/metrics"), headers=bearer(hardened.create_token("metrics")), timeout=10).text
    assert 'jarvis_rate_limited_total{reason="rate",surface="jarvis"}' in metrics
    assert first not in metrics
    assert second not in metrics


async def test_concurrent_calls_are_capped_per_token_and_tool(
    hardened: RunningJarvis, downstream: dict[str, str | None]
) -> None:
    token = hardened.create_token("profile:hard", name="busy")
    async with (
        mcp_client(hardened.url("/mcp/profile/hard"), token) as one,
        mcp_client(hardened.url("/mcp/profile/hard"), token) as two,
    ):
        assert "hard__slow" in {t.name for t in (await one.list_tools()).tools}  # as an agent would, first
        slow = asyncio.create_task(one.call_tool("hard__slow", {"seconds": 3}))
        await asyncio.sleep(1)
        limited = await two.call_tool("hard__slow", {"seconds": 0})
        assert limited.structured_content is not None
        assert limited.structured_content["reason"] == "concurrency"
        assert "running" in error_text(limited)
        assert text_of(await slow) == "done"
        assert text_of(await two.call_tool("hard__slow", {"seconds": 0})) == "done"


async def test_audit_log_records_who_did_what_redacted(
    hardened: RunningJarvis, admin_token: str, downstream: dict[str, str | None]
) -> None:
    token = hardened.create_token("jarvis:jarvis_server:list", "jarvis:jarvis_config", "profile:hard", name="audited")
    async with mcp_client(hardened.url(), token) as client:
        result_json(await client.call_tool("jarvis_server", {"action": "list"}))
        error_text(await client.call_tool("jarvis_server", {"action": "uninstall", "name": "hard"}))  # denied
        for _ in range(3):  # the third is over jarvis_config's limit in this stack
            await client.call_tool("jarvis_config", {"action": "get", "key": "log_level"})
        refused = await client.call_tool("jarvis_server", {"action": "usage", "audit": True})
        assert "admin" in error_text(refused)
    async with mcp_client(hardened.url("/mcp/profile/hard"), token) as client:
        assert text_of(await client.call_tool("hard__echo", {"text": "hello"})) == "hello"
    async with mcp_client(hardened.url(), admin_token) as admin:
        create = {
            "action": "create",
            "name": "secretive",
            "type": "stdio",
            "command": "true",
            "args": ["--password", "hunter2"],
            "env": {"API_KEY": "hunter2"},
        }
        result_json(await admin.call_tool("jarvis_server", create))
        mine = result_json(
            await admin.call_tool("jarvis_server", {"action": "usage", "audit": True, "query": "audited"})
        )["audit"]
        admins = result_json(
            await admin.call_tool("jarvis_server", {"action": "usage", "audit": True, "query": "admin", "limit": 5})
        )["audit"]
    seen = [(e["surface"], e["tool"], e["action"], e["outcome"]) for e in reversed(mine)]
    assert seen == [
        ("jarvis", "jarvis_server", "list", "ok"),
        ("jarvis", "jarvis_server", "uninstall", "denied"),
        ("jarvis", "jarvis_config", "get", "ok"),
        ("jarvis", "jarvis_config", "get", "ok"),
        ("jarvis", "jarvis_config", "get", "rate_limited"),
        ("jarvis", "jarvis_server", "usage", "denied"),
        ("profile", "hard__echo", "", "ok"),
    ]
    assert all(e["token_name"] == "audited" and e["token_id"] for e in mine)
    assert mine[0]["target"] == "hard"  # the profile call names its server
    assert mine[-2]["target"] == "hard"  # the denied uninstall names its server
    assert mine[-2]["arguments"] == {"action": "uninstall", "name": "hard"}
    assert mine[0]["arguments"] == {"text": "hello"}
    assert all(e["latency_ms"] >= 0 for e in mine)
    created = next(e for e in admins if e["action"] == "create")
    assert created["arguments"]["env"] == "[redacted]"
    assert created["arguments"]["args"] == "[list of 2 items]"
    assert created["target"] == "secretive"
    exported = hardened.cli("audit", "export", "--token", "audited").stdout.splitlines()
    assert [json.loads(line)["id"] for line in exported] == [e["id"] for e in mine]
    everything = hardened.cli("audit", "export").stdout
    assert "hunter2" not in everything
    assert token not in everything
    assert admin_token not in everything


def test_small_fuzz_of_every_surface_gives_no_5xx(
    hardened: RunningJarvis, admin_token: str, downstream: dict[str, str | None]
) -> None:
    """The CI-sized version of bench/fuzz_endpoints.py, with a token where the surface needs one."""
    token = hardened.create_token("admin", name="fuzz")
    surfaces: dict[str, str | None] = {
        path: token for path in ("/mcp", "/mcp/jarvis", "/mcp/debug", "/mcp/orchestrator")
    }
    surfaces["/mcp?no-token"] = None
    surfaces.update(downstream)
    report = fuzz(hardened.base_url, surfaces, fixed_cases() + mutated_cases(20, seed=15), Report())
    assert report.requests > 500
    assert report.server_errors == [], report.line()
    assert "Traceback" not in hardened.log()


async def test_a_tools_rate_limit_holds_through_discovery(
    hardened: RunningJarvis, downstream: dict[str, str | None]
) -> None:
    """Issue 34 #8: the gate keyed /mcp's calls on `tool_call`, so a limited tool was called there without limit."""
    token = hardened.create_token("jarvis", name="detour")
    async with mcp_client(hardened.url(), token) as jarvis:
        for _ in range(2):  # jarvis_config's burst, spent on its own surface
            result_json(await jarvis.call_tool("jarvis_config", {"action": "list"}))
    async with mcp_client(hardened.url("/mcp"), token) as discovery:
        for name in ("jarvis_config", "Jarvis-Config"):  # the name as tool_find gives it, and a variant of it
            limited = await discovery.call_tool("tool_call", {"name": name, "arguments": {"action": "list"}})
            assert limited.structured_content is not None, error_text(limited)
            assert limited.structured_content["reason"] == "rate"
            assert "may call jarvis_config" in error_text(limited)
        # A loaded tool called by its own name is the same tool.
        result_json(await discovery.call_tool("tool_load", {"names": ["jarvis_config"]}))
        limited = await discovery.call_tool("jarvis_config", {"action": "list"})
        assert limited.structured_content is not None, error_text(limited)
        assert limited.structured_content["reason"] == "rate"
        # Names that are no tool share one key (they cannot mint keys), and do not spend the real tool's.
        for n in range(3):
            missing = await discovery.call_tool("tool_call", {"name": f"no_such_tool_{n}", "arguments": {}})
            assert "not found" in error_text(missing)


async def test_one_pool_of_calls_in_flight_per_token_across_routes(
    hardened: RunningJarvis, downstream: dict[str, str | None]
) -> None:
    """Issue 34 #8: the discovery route gave each token a second pool for hard__slow (concurrent 1)."""
    token = hardened.create_token("servers:hard", name="two-pools")
    async with (
        mcp_client(hardened.url("/mcp/profile/hard"), token) as profile,
        mcp_client(hardened.url("/mcp"), token) as discovery,
    ):
        quick = {"name": "hard__slow", "arguments": {"seconds": 0}}
        for _ in range(50):  # discovery's catalog learns the server's tools from the host
            answer = await discovery.call_tool("tool_call", quick)
            if not answer.is_error:
                break
            await asyncio.sleep(0.2)
        assert text_of(answer) == "done", error_text(answer)
        assert "hard__slow" in {t.name for t in (await profile.list_tools()).tools}
        slow = asyncio.create_task(profile.call_tool("hard__slow", {"seconds": 3}))
        await asyncio.sleep(1)
        limited = await discovery.call_tool("tool_call", quick)
        assert limited.structured_content is not None, error_text(limited)
        assert limited.structured_content["reason"] == "concurrency"
        assert "hard__slow" in error_text(limited)
        assert text_of(await slow) == "done"
        assert text_of(await discovery.call_tool("tool_call", quick)) == "done"
