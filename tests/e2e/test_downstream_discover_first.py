"""Jarvis's first request to an HTTP server is a 2026-07-28 `server/discover` (issue 47 item 1, decision 0067), and
what the server answered is remembered: the reference server (tests/support/reference_server.py) in each of its eras,
recording every request that reaches it, through a real `jarvis up`.

- A 2025-era server (`legacy`) refuses the discover and gets `initialize`; after a restart, `initialize` at once.
- A dual-era server gets the discover, then `initialize` (its 2025 session), and is reached in both versions.
- A 2026-only server (`modern`) refuses that `initialize` once; after a restart it is asked `server/discover` only.
The headers and `_meta` of that first request are the conformance suite's to judge (`request-metadata`,
`http-standard-headers` in tests/e2e/test_downstream_client_conformance.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.downstream import FAST_ENV, create_profile, eventually, reference, server_info
from tests.support.stack import RunningJarvis, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def jarvis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    env = {"HOME": str(tmp_path_factory.mktemp("home")), **FAST_ENV}
    running = start_jarvis(tmp_path_factory.mktemp("discover-first"), env=env)
    yield running
    running.stop()


def requests(record: Path) -> list[tuple[str, str]]:
    """(method, version) of each request that reached the server, in order."""
    seen = [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
    return [(entry["method"], entry["version"]) for entry in seen]


async def listed_through(jarvis: RunningJarvis, name: str, url: str) -> dict[str, Any]:
    """`url` installed as `name` in a profile of its own, its tools listed there; then its `info`."""
    async with mcp_client(jarvis.url()) as admin:
        create = {"action": "create", "name": name, "type": "streamable-http", "url": url}
        result_json(await admin.call_tool("jarvis_server", create))
        await create_profile(admin, name, name)
    await tools_listed(jarvis, name)
    async with mcp_client(jarvis.url()) as admin:
        return await server_info(admin, name)


async def tools_listed(jarvis: RunningJarvis, name: str) -> None:
    async def listed() -> bool:
        async with mcp_client(jarvis.url(f"/mcp/profile/{name}")) as client:
            return any(t.name.endswith("test_simple_text") for t in (await client.list_tools()).tools)

    await eventually(listed, 20, f"{name}'s tools listed")


async def restarted(jarvis: RunningJarvis, name: str) -> None:
    async with mcp_client(jarvis.url()) as admin:
        result_json(await admin.call_tool("jarvis_profile", {"action": "restart", "name": name}))
    await tools_listed(jarvis, name)


DISCOVER = ("server/discover", "2026-07-28")
INITIALIZE = ("initialize", "2025-11-25")


async def test_a_2025_server_gets_initialize_after_its_refused_discover_and_then_at_once(
    jarvis: RunningJarvis, tmp_path: Path
) -> None:
    record = tmp_path / "legacy.requests"
    with reference(record, "legacy") as url:
        info = await listed_through(jarvis, "legacy", url)
        first = requests(record)
        assert first[:2] == [DISCOVER, INITIALIZE], first
        assert first.count(DISCOVER) == 1, first
        assert info["runtime"]["speaks"] == ["2025-11-25"], info
        await restarted(jarvis, "legacy")
        again = requests(record)[len(first) :]
        assert again[0] == INITIALIZE, again  # remembered: no discover this time
        assert DISCOVER not in again, again


async def test_a_dual_server_is_discovered_then_initialized(jarvis: RunningJarvis, tmp_path: Path) -> None:
    record = tmp_path / "dual.requests"
    with reference(record) as url:
        info = await listed_through(jarvis, "dual", url)
        first = requests(record)
        assert first[:2] == [DISCOVER, INITIALIZE], first
        assert first.count(DISCOVER) == 1, first  # its 2026 versions are the first discover's: none asked after
        assert info["runtime"]["speaks"] == ["2025-11-25", "2026-07-28"], info


async def test_a_2026_only_server_refuses_initialize_once(jarvis: RunningJarvis, tmp_path: Path) -> None:
    record = tmp_path / "modern.requests"
    with reference(record, "modern") as url:
        info = await listed_through(jarvis, "modern", url)
        first = requests(record)
        assert first[0] == DISCOVER, first
        assert [method for method, _ in first].count("initialize") == 1, first  # asked once whether it speaks 2025
        assert info["runtime"]["speaks"] == ["2026-07-28"], info
        await restarted(jarvis, "modern")
        again = requests(record)[len(first) :]
        assert again[0] == DISCOVER, again
        assert "initialize" not in [method for method, _ in again], again  # remembered: 2026-07-28 only
