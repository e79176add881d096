"""Tokens through the `token` tool, and scopes bound to one project: a token for A cannot touch B."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import docker
import httpx2
import pytest

from tests.e2e.orchestrator.conftest import runtime_env
from tests.support.docker_env import remove_managed
from tests.support.stack import RunningJarvis, error_text, gate_refusal, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio
URL = "/mcp/orchestrator"


@pytest.fixture(scope="module")
def secured(
    tmp_path_factory: pytest.TempPathFactory, image: str, engine: docker.DockerClient
) -> Iterator[RunningJarvis]:
    data = tmp_path_factory.mktemp("secured-orchestrator")
    running = start_jarvis(
        data,
        "--require-auth",
        env=runtime_env(image, tmp_path_factory.mktemp("home"), JARVIS_AGGREGATOR_TOKEN_CACHE_SECONDS="1"),
    )
    yield running
    running.stop()
    remove_managed(engine, data)


def call_status(running: RunningJarvis, token: str, tool: str, arguments: dict[str, object]) -> int:
    """The HTTP status of one tools/call, 403 standing for the gate's refusal (a tool error it answers
    itself, before the MCP layer)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    answer = httpx2.post(running.url(URL), json=body, headers=headers, timeout=30)
    return 403 if gate_refusal(answer) else answer.status_code


async def test_project_bound_tokens(secured: RunningJarvis, tmp_path: Path) -> None:
    admin = secured.create_token("admin", name="admin")
    async with mcp_client(secured.url(URL), admin) as client:
        a = result_json(await client.call_tool("project", {"action": "create", "name": "alpha"}))["created"]["id"]
        b = result_json(await client.call_tool("project", {"action": "create", "name": "beta"}))["created"]["id"]
        minted = result_json(
            await client.call_tool("token", {"action": "create", "name": "alpha-agent", "scope": f"orchestrator@{a}"})
        )
        reader = result_json(await client.call_tool("token", {"action": "create", "scope": f"read@{a}"}))
        names = {t["name"] for t in result_json(await client.call_tool("token", {"action": "list"}))["tokens"]}
    assert minted["secret"].startswith("jv_")
    assert minted["token"]["scopes"] == [f"orchestrator@{a}"]
    assert {"alpha-agent", "admin"} <= names

    scoped = minted["secret"]
    async with mcp_client(secured.url(URL), scoped) as client:
        got = result_json(await client.call_tool("project", {"action": "get", "project_id": a}))
        assert got["id"] == a
        started = result_json(await client.call_tool("container", {"action": "start", "project_id": a}))
        assert started["container"]["state"] == "running"
        ran = result_json(await client.call_tool("container", {"action": "exec", "project_id": a, "command": ["true"]}))
        assert ran["exit_code"] == 0
    assert call_status(secured, scoped, "project", {"action": "delete", "project_id": b}) == 403
    assert call_status(secured, scoped, "project", {"action": "get", "project_id": b}) == 403
    assert call_status(secured, scoped, "session", {"action": "spawn", "project_id": b}) == 403
    assert call_status(secured, scoped, "project", {"action": "list"}) == 403  # names no project
    assert call_status(secured, scoped, "token", {"action": "create", "scope": "admin"}) == 403
    assert call_status(secured, scoped, "image_rebuild", {"project_id": a}) == 403  # defines an image: admin

    read = reader["secret"]
    # Allowed: the gate lets it through (the MCP layer then wants an initialized session: 400, not 403).
    assert call_status(secured, read, "session", {"action": "list", "project_id": a}) != 403
    assert call_status(secured, read, "container", {"action": "exec", "project_id": a, "command": ["id"]}) == 403
    assert call_status(secured, read, "session", {"action": "spawn", "project_id": a}) == 403

    async with mcp_client(secured.url(URL), admin) as client:
        revoked = result_json(await client.call_tool("token", {"action": "revoke", "token_id": minted["token"]["id"]}))
        assert revoked["revoked"]["revoked_at"]
        bad_scope = await client.call_tool("token", {"action": "create", "scope": "admin@x"})
        assert "invalid scope" in error_text(bad_scope)
