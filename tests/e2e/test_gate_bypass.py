"""Issue 34, item 1, replayed as the attack ran it: `jarvis up --require-auth` and a second, stateless aggregator
on the same services. A profile made through one of them is unknown to the other for a moment; a request to it in
that moment must meet the gate like any other (401 without a token), never be served as the local admin.

Before the fix the gate let a profile path it did not know through unguarded; the endpoint then read the registry,
found the profile and served the call with no caller set, which handlers took for the local admin."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from jarvis.aggregator.downstream.hosting.naming import namespaced
from jarvis.common.internal_plane import TOKEN_FILE_NAME
from tests.support.downstream import FAST_ENV, create_profile, create_server, text_of, time_server
from tests.support.stack import RunningJarvis, free_port, mcp_client, start_jarvis, wait_for_url

pytestmark = pytest.mark.anyio

PROTOCOL = "2025-11-25"
HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": PROTOCOL}


@dataclass
class Attacked:
    first: RunningJarvis
    second_url: str  # the stateless aggregator's base URL
    tokens: dict[str, str] = field(default_factory=dict)


@pytest.fixture(scope="module")
def attacked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Attacked]:
    home = tmp_path_factory.mktemp("home")
    registry_port = free_port()
    first = start_jarvis(
        tmp_path_factory.mktemp("first"),
        "--require-auth",
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
            # Slow re-reads widen the window in which the second aggregator does not know a new profile.
            "JARVIS_AGGREGATOR_DOWNSTREAM_WATCH_SECONDS": "30",
            "JARVIS_AGGREGATOR_PORT": str(port),
            "JARVIS_AGGREGATOR_STATELESS": "true",
            "JARVIS_AGGREGATOR_REQUIRE_AUTH": "true",
            "JARVIS_AGGREGATOR_REGISTRY_TARGET": f"127.0.0.1:{registry_port}",
            "JARVIS_INTERNAL_TOKEN_FILE": str(first.data_dir / TOKEN_FILE_NAME),
        },
    )
    try:
        wait_for_url(f"http://127.0.0.1:{port}/healthz")
        tokens = {
            "admin": first.create_token("admin", name="admin"),
            "jarvis": first.create_token("jarvis", name="jarvis"),
            "debug": first.create_token("debug", name="debug"),
        }
        yield Attacked(first, f"http://127.0.0.1:{port}", tokens)
    finally:
        second.terminate()
        second.wait(15)
        first.stop()
        print(log.read_text(errors="replace")[-4000:])


def _call(name: str, arguments: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def _initialize() -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "attacker", "version": "1"}},
    }


class Poller:
    """Fires unauthenticated requests at one URL until stopped, keeping every answer's status and body."""

    def __init__(self, url: str, message: dict[str, Any]) -> None:
        self.url, self.message = url, message
        self.answers: list[tuple[int, str]] = []
        self.stopped = anyio.Event()

    async def run(self) -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            while not self.stopped.is_set():
                answer = await http.post(self.url, headers=HEADERS, json=self.message)
                self.answers.append((answer.status_code, answer.text))
                await anyio.sleep(0.005)

    def served(self) -> list[tuple[int, str]]:
        return [(status, body) for status, body in self.answers if status != 401]


async def test_unauthenticated_calls_to_a_profile_made_on_the_other_replica_are_refused(attacked: Attacked) -> None:
    """The attack's first replay: a profile made on one replica while a client with no token polls the other."""
    admin = attacked.tokens["admin"]
    async with mcp_client(attacked.first.url(), admin) as client:
        await create_server(client, "bypass-clock", [time_server()])
    tool = namespaced("bypass-clock", "get_current_time")
    poller = Poller(attacked.second_url + "/mcp/profile/bypassed", _call(tool, {"timezone": "UTC"}))
    async with anyio.create_task_group() as group:
        group.start_soon(poller.run)
        await anyio.sleep(0.3)
        async with mcp_client(attacked.first.url(), admin) as client:
            await create_profile(client, "bypassed", "bypass-clock")
        # The profile is served on the second replica to a caller with a token: the race window has passed.
        async with mcp_client(attacked.second_url + "/mcp/profile/bypassed", admin) as client:
            answer = await client.call_tool(tool, {"timezone": "UTC"})
            assert '"timezone": "UTC"' in text_of(answer)
        await anyio.sleep(0.3)
        poller.stopped.set()
    assert len(poller.answers) > 20, "the unauthenticated client did not poll through the window"
    assert poller.served() == [], f"unauthenticated requests were served: {poller.served()[:3]}"


async def test_a_jarvis_token_making_a_profile_opens_no_door_for_unauthenticated_calls(attacked: Attacked) -> None:
    """The second replay: a `jarvis` token (no admin) makes a profile through one aggregator and 40 unauthenticated
    calls fire at once at the stateless one, which has not read the registry since."""
    async with mcp_client(attacked.first.url(), attacked.tokens["admin"]) as client:
        await create_server(client, "stateless-clock", [time_server()])
    url = attacked.second_url + "/mcp/profile/stateless-bypass"
    tool = namespaced("stateless-clock", "get_current_time")
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        mcp_client(attacked.first.url(), attacked.tokens["jarvis"]) as client,
    ):
        await create_profile(client, "stateless-bypass", "stateless-clock")
        answers = [await http.post(url, headers=HEADERS, json=_call(tool, {"timezone": "UTC"}, i)) for i in range(40)]
    assert [a.status_code for a in answers] == [401] * 40, [a.text[:200] for a in answers if a.status_code != 401]
    assert all("result" not in a.text for a in answers)
    assert 'Bearer realm="jarvis"' in answers[0].headers["www-authenticate"]


async def test_no_ownerless_session_opens_on_a_profile_the_stateful_aggregator_does_not_know(
    attacked: Attacked,
) -> None:
    """The third replay: stateful `jarvis up` let an unauthenticated `initialize` through (a session no token owns)."""
    admin = attacked.tokens["admin"]
    poller = Poller(attacked.first.base_url + "/mcp/profile/ownerless", _initialize())
    async with anyio.create_task_group() as group:
        group.start_soon(poller.run)
        await anyio.sleep(0.3)
        async with mcp_client(attacked.second_url + "/mcp/jarvis", admin) as client:
            await create_server(client, "ownerless-clock", [time_server()])
            await create_profile(client, "ownerless", "ownerless-clock")
        async with mcp_client(attacked.first.base_url + "/mcp/profile/ownerless", admin) as client:
            listed = {t.name for t in (await client.list_tools()).tools}
        assert listed == {
            namespaced("ownerless-clock", "get_current_time"),
            namespaced("ownerless-clock", "convert_time"),
        }
        await anyio.sleep(0.3)
        poller.stopped.set()
    assert len(poller.answers) > 20
    assert poller.served() == [], f"unauthenticated initialize was answered: {poller.served()[:3]}"


async def test_the_gate_decides_before_any_lookup(attacked: Attacked) -> None:
    """401 without a token and 403 without the surface's scope, whether the name exists or not (no name is
    confirmed to a caller the gate refuses); 404 only for a caller who may use profiles."""
    async with httpx2.AsyncClient(timeout=30, headers=HEADERS) as http:
        for base in (attacked.first.base_url, attacked.second_url):
            url = base + "/mcp/profile/never-made"
            anonymous = await http.post(url, json=_initialize())
            assert anonymous.status_code == 401, anonymous.text
            assert "resource" not in anonymous.text
            assert "never-made" not in anonymous.text
            debug = await http.post(
                url, json=_initialize(), headers={"Authorization": f"Bearer {attacked.tokens['debug']}"}
            )
            assert debug.status_code == 403, debug.text
            assert debug.json()["error"] == "insufficient_scope"
            admin = await http.post(
                url, json=_initialize(), headers={"Authorization": f"Bearer {attacked.tokens['admin']}"}
            )
            assert admin.status_code == 404, admin.text
            assert "never-made" in admin.json()["message"]
