"""A hung registry (SIGSTOP: its port still accepts, nothing answers), seen from a real aggregator process.

Readiness says which backend is down within its bound, a tool call fails in seconds with an error naming
the registry and what to check, and `jarvis_check_status` reports it; liveness stays cheap and green.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

from tests.support.stack import error_text, free_port, mcp_client, result_json, wait_for_url

pytestmark = pytest.mark.anyio


@dataclass
class Deployed:
    registry: subprocess.Popen[bytes]
    aggregator: subprocess.Popen[bytes]
    registry_target: str
    base_url: str


@pytest.fixture
def deployed(tmp_path: Path) -> Iterator[Deployed]:
    """`jarvis serve registry` and `jarvis serve aggregator`, sharing a service credential, on loopback."""
    registry_port, aggregator_port = free_port(), free_port()
    target = f"127.0.0.1:{registry_port}"
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "JARVIS_LOG_LEVEL": "WARNING",
        "JARVIS_LOG_JSON": "false",
        "JARVIS_INTERNAL_TOKEN": secrets.token_hex(32),
        "JARVIS_REGISTRY_DATA_DIR": str(tmp_path / "registry"),
        "JARVIS_REGISTRY_LISTEN": target,
        "JARVIS_AGGREGATOR_PORT": str(aggregator_port),
        "JARVIS_AGGREGATOR_REGISTRY_TARGET": target,
    }
    (tmp_path / "registry").mkdir()
    log = (tmp_path / "processes.log").open("ab")
    registry = subprocess.Popen(
        [sys.executable, "-m", "jarvis.cli", "serve", "registry"], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    aggregator = subprocess.Popen(
        [sys.executable, "-m", "jarvis.cli", "serve", "aggregator"], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        wait_for_url(f"http://127.0.0.1:{aggregator_port}/livez", timeout=120)
        yield Deployed(registry, aggregator, target, f"http://127.0.0.1:{aggregator_port}")
    finally:
        registry.send_signal(signal.SIGCONT)
        for process in (aggregator, registry):
            process.terminate()
        for process in (aggregator, registry):
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        log.close()


def _get(url: str) -> tuple[httpx2.Response, float]:
    started = time.monotonic()
    response = httpx2.get(url, timeout=30)
    return response, time.monotonic() - started


async def test_a_hung_registry_is_named_by_readiness_tools_and_status(deployed: Deployed) -> None:
    ready, _ = _get(deployed.base_url + "/readyz")
    assert ready.status_code == 200, ready.text
    assert ready.json()["checks"]["registry"] is True
    async with mcp_client(deployed.base_url + "/mcp/jarvis") as client:
        result_json(await client.call_tool("jarvis_config", {"action": "list"}))

        deployed.registry.send_signal(signal.SIGSTOP)
        try:
            readiness, took = _get(deployed.base_url + "/readyz")
            assert readiness.status_code == 503, readiness.text
            assert took < 4, f"/readyz took {took:.1f} s"
            down = readiness.json()["down"]
            assert set(down) == {"registry"}
            assert deployed.registry_target in down["registry"]

            alive, took = _get(deployed.base_url + "/livez")
            assert alive.status_code == 200
            assert took < 1
            assert _get(deployed.base_url + "/healthz")[0].status_code == 200

            started = time.monotonic()
            failed = await client.call_tool("jarvis_config", {"action": "list"})
            took = time.monotonic() - started
            message = error_text(failed)
            assert took < 10, f"the call took {took:.1f} s"
            assert f"the registry service at {deployed.registry_target} did not answer within 5 s" in message
            assert "`jarvis serve registry`" in message

            started = time.monotonic()
            status = result_json(await client.call_tool("jarvis_check_status", {}))
            assert time.monotonic() - started < 10
            assert status["healthy"] is False
            assert status["services"]["registry"]["ok"] is False
            assert deployed.registry_target in status["services"]["registry"]["detail"]
        finally:
            deployed.registry.send_signal(signal.SIGCONT)

        deadline = time.monotonic() + 30
        while _get(deployed.base_url + "/readyz")[0].status_code != 200:
            assert time.monotonic() < deadline, "readiness did not come back after SIGCONT"
            time.sleep(0.2)
        result_json(await client.call_tool("jarvis_config", {"action": "list"}))
