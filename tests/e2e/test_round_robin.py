"""Two aggregator processes behind a per-request round-robin on loopback (no affinity of any kind): a
`jarvis up --stateless` and a `jarvis serve aggregator` on its registry, both with Redis. Sessions of
both protocol versions, their `tool_load` sets and shares work whichever process takes each request."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

from jarvis.common.internal_plane import TOKEN_FILE_NAME
from tests.support.discovery import DISCOVERY_TOOLS, Recorder, call, discovery_client, names
from tests.support.downstream import FAST_ENV, create_server, eventually, text_of, time_server
from tests.support.redis_server import redis_url
from tests.support.round_robin import RoundRobin
from tests.support.stack import free_port, mcp_client, result_json, start_jarvis, wait_for_url

pytestmark = pytest.mark.anyio

ENV = {**FAST_ENV, "JARVIS_AGGREGATOR_DOWNSTREAM_INIT_TIMEOUT": "30"}


@dataclass
class Balanced:
    balancer: RoundRobin

    def url(self, path: str) -> str:
        return self.balancer.base_url + path


@pytest.fixture(scope="module")
def balanced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Balanced]:
    home = tmp_path_factory.mktemp("home")
    with redis_url(tmp_path_factory.mktemp("redis")) as redis:
        registry_port = free_port()
        env = {"HOME": str(home), "JARVIS_REDIS_URL": redis, **ENV}
        first = start_jarvis(
            tmp_path_factory.mktemp("first"),
            "--stateless",
            env={**env, "JARVIS_REGISTRY_PORT": str(registry_port)},
            timeout=180,
        )
        port = free_port()
        log = Path(tmp_path_factory.mktemp("second")) / "aggregator.log"
        second = subprocess.Popen(
            [sys.executable, "-m", "jarvis.cli", "serve", "aggregator"],
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            env={
                **os.environ,
                **env,
                "JARVIS_AGGREGATOR_PORT": str(port),
                "JARVIS_AGGREGATOR_STATELESS": "true",
                "JARVIS_AGGREGATOR_REGISTRY_TARGET": f"127.0.0.1:{registry_port}",
                "JARVIS_INTERNAL_TOKEN_FILE": str(first.data_dir / TOKEN_FILE_NAME),
            },
        )
        try:
            wait_for_url(f"http://127.0.0.1:{port}/livez", timeout=180)
            with RoundRobin([first.base_url, f"http://127.0.0.1:{port}"]) as balancer:
                yield Balanced(balancer)
        finally:
            second.terminate()
            try:
                second.wait(30)
            except subprocess.TimeoutExpired:
                second.kill()
                second.wait(5)
            first.stop()
            print(log.read_text(errors="replace")[-4000:])


def both_served(balanced: Balanced, before: dict[str, int]) -> bool:
    """Both processes took requests since `before` was read."""
    return all(balanced.balancer.served[b] > before.get(b, 0) for b in balanced.balancer.backends)


async def test_a_2025_session_and_its_loaded_tools_span_both_processes(balanced: Balanced) -> None:
    before = dict(balanced.balancer.served)
    recorder = Recorder()
    async with discovery_client(balanced.url("/mcp"), recorder=recorder) as client:
        loaded = await call(client, "tool_load", {"names": ["jarvis_profile", "jarvis_config"]})
        assert loaded["active_count"] == 2
        for _ in range(4):
            assert await names(client) == [*DISCOVERY_TOOLS, "jarvis_profile", "jarvis_config"]
            assert (await call(client, "tool_active"))["count"] == 2
        assert "profiles" in await call(client, "jarvis_profile", {"action": "list"})
    assert recorder.session_id
    assert both_served(balanced, before)


async def test_a_2026_client_spans_both_processes(balanced: Balanced) -> None:
    before = dict(balanced.balancer.served)
    async with discovery_client(balanced.url("/mcp"), mode="auto") as client:
        assert client.protocol_version >= "2026"
        for _ in range(3):
            assert await names(client) == DISCOVERY_TOOLS
            assert "profiles" in await call(
                client, "tool_call", {"name": "jarvis_profile", "arguments": {"action": "list"}}
            )
    assert both_served(balanced, before)


async def test_a_share_serves_and_counts_across_both_processes(balanced: Balanced) -> None:
    async with mcp_client(balanced.url("/mcp/jarvis")) as admin:
        await create_server(admin, "balanced-clock", [time_server()])
        started = result_json(
            await admin.call_tool("jarvis_share", {"action": "start", "name": "balanced-clock", "expires_in": 600})
        )["started"]
    token, path = started["token"], "/share/balanced-clock/mcp"

    async def served_by_both() -> bool:
        # The process that started the share knows it at once; the other reads shares every watch tick, and
        # until then answers the share's path with 404.
        try:
            async with mcp_client(balanced.url(path), token) as probe:
                for _ in range(4):
                    await probe.list_tools()
        except Exception:
            return False
        return True

    await eventually(served_by_both, timeout=30, what="the new share served by both processes")
    before = dict(balanced.balancer.served)
    async with mcp_client(balanced.url(path), token) as guest:
        for zone in ("UTC", "Europe/Paris", "Asia/Tokyo", "UTC"):
            answer = await guest.call_tool("get_current_time", {"timezone": zone})
            assert f'"timezone": "{zone}"' in text_of(answer)
    # A share speaks what its server speaks: this one is reached by Jarvis over a 2025-era session.
    async with mcp_client(balanced.url(path), token, mode="auto") as modern:
        assert "get_current_time" in [t.name for t in (await modern.list_tools()).tools]
    assert both_served(balanced, before)

    async with mcp_client(balanced.url("/mcp/jarvis")) as admin:

        async def listed() -> dict[str, object]:
            shares = result_json(await admin.call_tool("jarvis_share", {"action": "list"}))["shares"]
            return shares[0] if shares and shares[0]["tool_calls"] == 4 else {}

        # Each process ships its own counts with its usage (every 2 s); the listing adds them up.
        await eventually(listed, what="both processes' share calls counted in the listing")
        stopped = result_json(await admin.call_tool("jarvis_share", {"action": "stop", "name": "balanced-clock"}))
    assert stopped["tool_calls"] == 4

    async def refused_by_both() -> bool:
        async with httpx2.AsyncClient() as http:
            answers = [
                await http.post(
                    balanced.url(path),
                    headers={"Authorization": f"Bearer {token}"},
                    json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                )
                for _ in balanced.balancer.backends
            ]
        return all(a.status_code in (401, 403) for a in answers)

    await eventually(refused_by_both, what="the stopped share refused by both processes")
