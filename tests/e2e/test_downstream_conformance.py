"""Transparency: the official MCP conformance suite against a one-server, unprefixed profile surface gives the
results it gives against that server directly (server-everything, reached by Jarvis over streamable HTTP)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.downstream import CONFORMANCE, NODE, create_profile, everything_server
from tests.support.stack import RunningJarvis, free_port, mcp_client, result_json, start_jarvis

pytestmark = [pytest.mark.anyio, pytest.mark.node]

# Checks Jarvis passes and the bare server fails: its gate validates Host and Origin (DNS rebinding).
JARVIS_DOES_BETTER = {"dns-rebinding-protection"}
_SUMMARY = re.compile(r"^[✓✗] (\S+): (\d+) passed, (\d+) failed")


def conformance(url: str, workdir: Path) -> dict[str, tuple[int, int]]:
    """Scenario -> (checks passed, checks failed), from the suite's summary."""
    if not CONFORMANCE.exists():
        message = "@modelcontextprotocol/conformance is missing under tools/node: run scripts/bootstrap"
        if os.environ.get("JARVIS_REQUIRE_ALL") == "1":
            pytest.fail(message)
        pytest.skip(message)
    run = subprocess.run([str(NODE), str(CONFORMANCE), "server", "--url", url], capture_output=True, text=True,
                         cwd=workdir, timeout=600, check=False)
    results = {m.group(1): (int(m.group(2)), int(m.group(3)))
               for m in map(_SUMMARY.match, run.stdout.splitlines()) if m}
    assert results, f"no conformance summary:\n{run.stdout[-3000:]}\n{run.stderr[-2000:]}"
    return results


@pytest.fixture(scope="module")
def everything_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    node, script, _ = everything_server()
    port = free_port()
    process = subprocess.Popen([node, script, "streamableHttp"], env={**os.environ, "PORT": str(port)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               cwd=tmp_path_factory.mktemp("everything"))
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        _wait_listening(port)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def _wait_listening(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"server-everything did not listen on {port}")


@pytest.fixture(scope="module")
def transparent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    home = tmp_path_factory.mktemp("home")
    running = start_jarvis(tmp_path_factory.mktemp("transparent"), env={"HOME": str(home)})
    yield running
    running.stop()


async def test_conformance_through_a_transparent_profile_matches_the_server(
        transparent: RunningJarvis, everything_url: str, tmp_path: Path) -> None:
    async with mcp_client(transparent.url()) as admin:
        result_json(await admin.call_tool("jarvis_server", {"action": "create", "name": "everything-http",
                                                            "type": "streamable-http", "url": everything_url}))
        await create_profile(admin, "mirror", "everything-http")
        result_json(await admin.call_tool("jarvis_config", {"action": "set", "key": "servers.unprefixed_profiles",
                                                            "value": ["mirror"]}))
    direct = conformance(everything_url, tmp_path)
    through = conformance(transparent.url("/mcp/profile/mirror"), tmp_path)
    assert set(through) == set(direct)
    differences = {name: (direct[name], through[name]) for name in direct if direct[name] != through[name]}
    assert set(differences) <= JARVIS_DOES_BETTER, differences
    for name in differences:  # where they differ, Jarvis passes more checks, never fewer
        assert through[name][0] > direct[name][0], (name, differences[name])
    assert sum(p for p, _ in direct.values()) >= 10  # the comparison covers real passing scenarios
