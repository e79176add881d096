"""Per-person keys (issue 32 item 4) through a real `jarvis up`: a stdio server whose TOY_NAME is each person's own
(`servers.per_person`) runs one instance per person that set a value, with their value in its environment; the
value is never shown back; an instance idle for `servers.idle_stop_seconds` is stopped while another is in use."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator

import httpx2
import pytest

from tests.support.downstream import create_profile, create_toy
from tests.support.stack import RunningJarvis, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def jarvis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    env = {"HOME": str(tmp_path_factory.mktemp("home")), "JARVIS_AGGREGATOR_DOWNSTREAM_WATCH_SECONDS": "0.5"}
    running = start_jarvis(tmp_path_factory.mktemp("per-person-keys"), "--require-auth", env=env)
    yield running
    running.stop()
    print(running.log()[-4000:])


async def whoami(jarvis: RunningJarvis, token: str) -> tuple[bool, str]:
    async with mcp_client(jarvis.url("/mcp/profile/keyed"), token) as client:
        result = await client.call_tool("keyed__whoami", {})
    return bool(result.is_error), str(getattr(result.content[0], "text", ""))


def metrics(jarvis: RunningJarvis, token: str) -> str:
    return httpx2.get(jarvis.url("/metrics"), headers={"Authorization": f"Bearer {token}"}, timeout=10).text


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_two_people_two_instances_one_reaped_when_idle(jarvis: RunningJarvis) -> None:
    admin = jarvis.create_token("admin", name="admin")
    alice, bob = jarvis.create_token("admin", name="alice"), jarvis.create_token("admin", name="bob")
    async with mcp_client(jarvis.url(), admin) as client:
        config = {"action": "set", "key": "servers.per_person", "value": {"keyed": ["TOY_NAME"]}}
        result_json(await client.call_tool("jarvis_config", config))
        await create_toy(client, "keyed")
        await create_profile(client, "keyed", "keyed")

    failed, text = await whoami(jarvis, alice)
    assert failed, text
    assert "action=connect name=keyed" in text

    for token, value in ((alice, "alice-secret-name"), (bob, "bob-secret-name")):
        async with mcp_client(jarvis.url(), token) as client:
            done = await client.call_tool(
                "jarvis_server", {"action": "connect", "name": "keyed", "env": {"TOY_NAME": value}}
            )
            assert result_json(done) == {
                "server": "keyed",
                "state": "ready",
                "set": ["TOY_NAME"],
                "needed": ["TOY_NAME"],
            }
            info = result_json(await client.call_tool("jarvis_server", {"action": "info", "name": "keyed"}))
            assert info["your_keys"] == {"needed": ["TOY_NAME"], "set": ["TOY_NAME"]}
            assert value not in json.dumps(info)

    failed, text = await whoami(jarvis, alice)
    assert not failed, text
    alice_seen = json.loads(text)
    failed, text = await whoami(jarvis, bob)
    assert not failed, text
    bob_seen = json.loads(text)
    assert alice_seen["name"] == "alice-secret-name"
    assert bob_seen["name"] == "bob-secret-name"
    assert alice_seen["pid"] != bob_seen["pid"]
    assert json.loads((await whoami(jarvis, alice))[1])["pid"] == alice_seen["pid"]  # the same instance again
    assert 'jarvis_downstream_person_instances{server="keyed"} 2.0' in metrics(jarvis, admin)

    async with mcp_client(jarvis.url(), admin) as client:
        result_json(
            await client.call_tool("jarvis_config", {"action": "set", "key": "servers.idle_stop_seconds", "value": 2})
        )
    for _ in range(12):  # Bob keeps calling; Alice is idle
        assert json.loads((await whoami(jarvis, bob))[1])["pid"] == bob_seen["pid"]
        if not alive(alice_seen["pid"]):
            break
        await asyncio.sleep(0.5)
    assert not alive(alice_seen["pid"])
    assert alive(bob_seen["pid"])
    assert 'jarvis_downstream_person_instances{server="keyed"} 1.0' in metrics(jarvis, admin)
    async with mcp_client(jarvis.url(), bob) as client:
        gone = result_json(await client.call_tool("jarvis_server", {"action": "disconnect", "name": "keyed"}))
        assert gone == {"server": "keyed", "forgotten": True}
    failed, text = await whoami(jarvis, bob)
    assert failed, text
    assert "action=connect name=keyed" in text
    assert "alice-secret-name" not in jarvis.log()
