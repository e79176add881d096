"""Two aggregator replicas on one registry (a `jarvis up` and a `jarvis serve aggregator` pointed at its
registry): a share started on one is served by both, its use counts add up across them, and stopping it
on one closes it on the other."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
import pytest

from jarvis.common.internal_plane import TOKEN_FILE_NAME
from tests.support.downstream import FAST_ENV, create_server, eventually, text_of, time_server
from tests.support.stack import RunningJarvis, free_port, mcp_client, result_json, start_jarvis, wait_for_url

pytestmark = pytest.mark.anyio


@dataclass
class Replicas:
    first: RunningJarvis
    second_url: str


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    home = tmp_path_factory.mktemp("home")
    registry_port = free_port()
    first = start_jarvis(
        tmp_path_factory.mktemp("first"),
        env={"HOME": str(home), **FAST_ENV, "JARVIS_REGISTRY_PORT": str(registry_port)},
    )
    port = free_port()
    log = Path(tmp_path_factory.mktemp("second")) / "aggregator.log"
    second = subprocess.Popen(
        [sys.executable, "-m", "jarvis.cli", "serve", "aggregator"],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env={
            **os.environ,
            "HOME": str(home),
            **FAST_ENV,
            # Its periodic read of servers and profiles comes once a minute: what it serves at once, it learns on a
            # miss (a name it does not know yet), as a replica does between two reads.
            "JARVIS_AGGREGATOR_DOWNSTREAM_WATCH_SECONDS": "60",
            "JARVIS_AGGREGATOR_PORT": str(port),
            "JARVIS_AGGREGATOR_REGISTRY_TARGET": f"127.0.0.1:{registry_port}",
            # The registry of `jarvis up` checks the internal plane's credential it made in its data dir.
            "JARVIS_INTERNAL_TOKEN_FILE": str(first.data_dir / TOKEN_FILE_NAME),
        },
    )
    try:
        wait_for_url(f"http://127.0.0.1:{port}/healthz")
        yield Replicas(first, f"http://127.0.0.1:{port}")
    finally:
        second.terminate()
        second.wait(15)
        first.stop()
        print(log.read_text(errors="replace")[-4000:])


async def test_share_uses_count_across_replicas_and_stop_reaches_both(replicas: Replicas) -> None:
    async with mcp_client(replicas.first.url()) as admin:
        await create_server(admin, "replicated-clock", [time_server()])
        started = result_json(
            await admin.call_tool("jarvis_share", {"action": "start", "name": "replicated-clock", "expires_in": 600})
        )["started"]
    token = started["token"]
    path = "/share/replicated-clock/mcp"
    for base in (replicas.first.base_url, replicas.second_url):  # each replica serves the share
        async with mcp_client(base + path, token) as guest:
            answer = await guest.call_tool("get_current_time", {"timezone": "UTC"})
            assert '"timezone": "UTC"' in text_of(answer)
    async with mcp_client(replicas.second_url + path, token) as guest:
        await guest.call_tool("get_current_time", {"timezone": "Europe/Paris"})

    async with mcp_client(replicas.first.url()) as admin:

        async def listed() -> dict[str, object]:
            shares = result_json(await admin.call_tool("jarvis_share", {"action": "list"}))["shares"]
            return shares[0] if shares and shares[0]["tool_calls"] == 3 else {}

        # Replica two ships its counts with its usage (every 2 s); replica one sees them in the registry.
        share = await eventually(listed, what="the second replica's share uses in the listing")
        assert share["requests"] >= 9  # initialize, initialized, list/call per session at least
        stopped = result_json(await admin.call_tool("jarvis_share", {"action": "stop", "name": "replicated-clock"}))
    assert stopped["tool_calls"] == 3

    async def refused_on_second() -> bool:
        async with httpx2.AsyncClient() as http:
            answer = await http.post(
                replicas.second_url + path,
                headers={"Authorization": f"Bearer {token}"},
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            )
        return answer.status_code in (401, 403)

    # The other replica learns of the stop from the registry: its share list and token cache expire in seconds.
    await eventually(refused_on_second, what="the stopped share refused on the second replica")


async def test_a_share_started_on_one_replica_is_served_at_once_by_the_other(replicas: Replicas) -> None:
    """A share link used the moment it is handed out, on the replica that did not start it: that replica read the
    shares a moment before (it re-reads them every 2 s) and has not read the new server yet, and looks again rather
    than answering "not found"."""
    async with mcp_client(replicas.first.url()) as admin:
        await create_server(admin, "prompt-clock", [time_server()])
    async with mcp_client(replicas.second_url + "/mcp/jarvis") as second:
        result_json(await second.call_tool("jarvis_share", {"action": "list"}))  # the second replica reads them now
    async with mcp_client(replicas.first.url()) as admin:
        started = result_json(
            await admin.call_tool("jarvis_share", {"action": "start", "name": "prompt-clock", "expires_in": 600})
        )["started"]
        await anyio.sleep(0.3)
        try:
            async with mcp_client(replicas.second_url + "/share/prompt-clock/mcp", started["token"]) as guest:
                answer = await guest.call_tool("get_current_time", {"timezone": "UTC"})
            assert '"timezone": "UTC"' in text_of(answer)
        finally:
            result_json(await admin.call_tool("jarvis_share", {"action": "stop", "name": "prompt-clock"}))
