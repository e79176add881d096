"""Issue 34's third attack, items 4, 5 and 7, replayed through a real `jarvis up --require-auth`: non-admins changed
security settings, a list setting could not be emptied, an orchestrator token put a project on the bridge network,
and an exec-only token read the agent's secrets through exec."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from jarvis.common.scopes import ADMIN_CONFIG_KEYS
from tests.e2e.test_security_attacks import refused
from tests.support.stack import RunningJarvis, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio

# A valid value for each admin-only key: its default, so setting it changes nothing of the running instance.
VALID: dict[str, Any] = {
    "aggregator_url": None,  # the URL this instance serves, read from the fixture
    "audit.retention_days": 30,
    "usage.enabled": True,
    "share.default_expiry_seconds": 3600,
    "servers.interactive": [],
    "servers.oauth": [],
    "servers.oauth_clients": {},
    "servers.per_person": {},
    "log_level": "INFO",
}


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    running = start_jarvis(
        tmp_path_factory.mktemp("data"),
        "--require-auth",
        env={"HOME": str(tmp_path_factory.mktemp("home")), "JARVIS_AGGREGATOR_TOKEN_CACHE_SECONDS": "1"},
    )
    yield running
    running.stop()


def _value(running: RunningJarvis, key: str) -> Any:
    return running.base_url if key == "aggregator_url" else VALID[key]


async def test_every_setting_that_weakens_security_needs_admin(secured: RunningJarvis) -> None:
    assert set(VALID) == ADMIN_CONFIG_KEYS, "give each admin-only key a valid value here"
    jarvis, admin = secured.create_token("jarvis", name="j"), secured.create_token("admin", name="a")
    async with mcp_client(secured.url(), jarvis) as client:
        for key in sorted(ADMIN_CONFIG_KEYS):
            why = await refused(client, "jarvis_config", {"action": "set", "key": key, "value": _value(secured, key)})
            assert f"config key '{key}' needs an admin token" in why, (key, why)
        # The replayed attack: a one-day audit retention, a century-long share default, sampling for a server.
        for key, value in (("audit.retention_days", 1), ("share.default_expiry_seconds", 3_153_600_000)):
            await refused(client, "jarvis_config", {"action": "set", "key": key, "value": value})
        listed = {
            e["key"]: e for e in result_json(await client.call_tool("jarvis_config", {"action": "list"}))["config"]
        }
        assert listed["audit.retention_days"]["value"] == 30
        assert "needs the admin scope" in listed["audit.retention_days"]["description"]
        # A setting that weakens nothing stays the surface scope's.
        result_json(
            await client.call_tool("jarvis_config", {"action": "set", "key": "discovery.default_limit", "value": 6})
        )
    async with mcp_client(secured.url(), admin) as client:
        for key in sorted(ADMIN_CONFIG_KEYS):
            result_json(
                await client.call_tool("jarvis_config", {"action": "set", "key": key, "value": _value(secured, key)})
            )


async def test_a_list_setting_can_be_emptied(secured: RunningJarvis) -> None:
    admin = secured.create_token("admin", name="lists")
    async with mcp_client(secured.url(), admin) as client:
        key = "servers.unprefixed_profiles"
        result_json(await client.call_tool("jarvis_config", {"action": "set", "key": key, "value": ["solo"]}))
        result_json(await client.call_tool("jarvis_config", {"action": "set", "key": key, "value": []}))
        now = result_json(await client.call_tool("jarvis_config", {"action": "get", "key": key}))
    assert now["value"] == []


async def test_a_project_on_the_bridge_network_needs_admin(secured: RunningJarvis) -> None:
    orchestrator = secured.create_token("orchestrator", name="orch")
    async with mcp_client(secured.url("/mcp/orchestrator"), orchestrator) as client:
        why = await refused(client, "project", {"action": "create", "name": "wide-open", "network": True})
    assert "network=true needs an admin token" in why
    assert "may: admin" in why  # the scopes named are the one that would allow it
    admin = secured.create_token("admin", name="auditor")
    async with mcp_client(secured.url(), admin) as client:
        usage = result_json(
            await client.call_tool("jarvis_server", {"action": "usage", "audit": True, "query": "orch"})
        )
    denied = [e for e in usage["audit"] if e["outcome"] == "denied" and e["arguments"].get("network") is True]
    assert denied, usage["audit"][:3]


async def test_an_exec_only_token_cannot_exec_for_it_could_read_the_agents_secrets(secured: RunningJarvis) -> None:
    exec_only = secured.create_token("orchestrator:container:exec@pdemo", name="exec-only")
    # `read` lists the secrets' names only; exec would show their values, so it does not count.
    with_read = secured.create_token("orchestrator:container:exec@pdemo", "read@pdemo", name="exec-read")
    call = {"action": "exec", "project_id": "pdemo", "command": ["cat", "/proc/1/environ"]}
    for secret in (exec_only, with_read):
        async with mcp_client(secured.url("/mcp/orchestrator"), secret) as client:
            why = await refused(client, "container", call)
        assert "can read the project's secrets" in why, why
        assert "orchestrator:project:secret_list@pdemo" in why
        assert "orchestrator@pdemo" in why
    # With the secrets' scope beside exec's, the call gets past the scopes (to the runtime, which knows no pdemo).
    both = secured.create_token(
        "orchestrator:container:exec@pdemo", "orchestrator:project:secret_list@pdemo", name="exec-secrets"
    )
    async with mcp_client(secured.url("/mcp/orchestrator"), both) as client:
        why = await refused(client, "container", call)
    assert "secrets" not in why, why
    assert "scope" not in why, why
