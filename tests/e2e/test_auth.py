"""Authentication and authorization at the aggregator: tokens from the registry, scopes, HTTP checks."""

from __future__ import annotations

import json
import time

import httpx2
import pytest

from tests.support.stack import RunningJarvis, error_text, gate_refusal, mcp_client, result_json

pytestmark = pytest.mark.anyio

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw-http-test", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def post(
    running: RunningJarvis, body: object, headers: dict[str, str] | None = None, path: str = "/mcp/jarvis"
) -> httpx2.Response:
    return httpx2.post(
        running.url(path), content=json.dumps(body), headers={**MCP_HEADERS, **(headers or {})}, timeout=10
    )


def test_missing_token_is_401_with_www_authenticate(secured: RunningJarvis) -> None:
    response = post(secured, INITIALIZE)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert "jarvis token create" in response.json()["message"]


def test_bad_and_malformed_tokens_are_401(secured: RunningJarvis) -> None:
    bad = post(secured, INITIALIZE, {"Authorization": "Bearer jv_not-a-real-token"})
    assert bad.status_code == 401
    assert 'error="invalid_token"' in bad.headers["www-authenticate"]
    assert "jv_not-a-real-token" not in bad.text
    basic = post(secured, INITIALIZE, {"Authorization": "Basic dXNlcjpwYXNz"})
    assert basic.status_code == 401


def test_token_without_the_surface_is_403(secured: RunningJarvis) -> None:
    token = secured.create_token("orchestrator")
    response = post(secured, INITIALIZE, {"Authorization": f"Bearer {token}"})
    assert response.status_code == 403
    assert "insufficient_scope" in response.headers["www-authenticate"]


async def test_action_scopes_allow_and_deny(secured: RunningJarvis) -> None:
    token = secured.create_token("jarvis:jarvis_server:list", "jarvis:jarvis_check_status")
    async with mcp_client(secured.url(), token) as client:
        # tools/list shows the tools the token may call at least one action of (issue 31: a role's tools only).
        assert {t.name for t in (await client.list_tools()).tools} == {"jarvis_server", "jarvis_check_status"}
        listing = result_json(await client.call_tool("jarvis_server", {"action": "list"}))
        assert "servers" in listing
        assert result_json(await client.call_tool("jarvis_check_status", {}))["healthy"] is True
    raw_call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "jarvis_server", "arguments": {"action": "uninstall", "name": "time"}},
    }
    denied = gate_refusal(post(secured, raw_call, {"Authorization": f"Bearer {token}"}))
    assert denied is not None
    assert "jarvis_server action=uninstall" in denied


async def test_read_scope_reads_but_cannot_write(secured: RunningJarvis) -> None:
    token = secured.create_token("read")
    async with mcp_client(secured.url(), token) as client:
        result_json(await client.call_tool("jarvis_config", {"action": "list"}))
    raw_set = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "jarvis_config", "arguments": {"action": "set", "key": "log_level", "value": "DEBUG"}},
    }
    assert gate_refusal(post(secured, raw_set, {"Authorization": f"Bearer {token}"})) is not None


async def test_commands_and_images_need_admin(secured: RunningJarvis) -> None:
    surface_token = secured.create_token("jarvis")
    admin_token = secured.create_token("admin")
    create = {"action": "create", "name": "sneaky", "type": "stdio", "command": "sh"}
    raw = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "jarvis_server", "arguments": create}}
    refused = gate_refusal(post(secured, raw, {"Authorization": f"Bearer {surface_token}"}))
    assert refused is not None
    assert refused.endswith("may: admin")
    async with mcp_client(secured.url(), admin_token) as client:
        created = result_json(await client.call_tool("jarvis_server", create))
        assert created["created"]["name"] == "sneaky"
    # The surface scope still reads what the admin defined.
    async with mcp_client(secured.url(), surface_token) as client:
        info = result_json(await client.call_tool("jarvis_server", {"action": "info", "name": "sneaky"}))
        assert info["launch"]["command"] == "sh"


async def test_revoked_and_expired_tokens_stop_working(secured: RunningJarvis) -> None:
    token = secured.create_token("jarvis", name="short-lived")
    async with mcp_client(secured.url(), token) as client:
        result_json(await client.call_tool("jarvis_config", {"action": "list"}))
    listed = json.loads(secured.cli("token", "list", "--json").stdout)
    token_id = next(t["id"] for t in listed if t["name"] == "short-lived")
    assert all("secret" not in t and token not in json.dumps(t) for t in listed)
    secured.cli("token", "revoke", token_id)
    time.sleep(1.2)  # the aggregator caches verifications for 1 s in this fixture
    assert post(secured, INITIALIZE, {"Authorization": f"Bearer {token}"}).status_code == 401

    expiring = secured.create_token("jarvis", name="expiring", expires_in=1)
    time.sleep(2.2)
    assert post(secured, INITIALIZE, {"Authorization": f"Bearer {expiring}"}).status_code == 401


def test_session_cannot_be_used_with_another_token(secured: RunningJarvis) -> None:
    owner = secured.create_token("jarvis", name="owner")
    other = secured.create_token("jarvis", name="other")
    opened = post(secured, INITIALIZE, {"Authorization": f"Bearer {owner}"})
    assert opened.status_code == 200
    session = opened.headers["mcp-session-id"]
    listing = {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}
    hijack = post(
        secured,
        listing,
        {"Authorization": f"Bearer {other}", "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"},
    )
    assert hijack.status_code == 403


def test_host_and_origin_are_checked(jarvis: RunningJarvis) -> None:
    rebinding = post(jarvis, INITIALIZE, {"Host": "evil.example.com"})
    assert rebinding.status_code == 421
    cross_site = post(jarvis, INITIALIZE, {"Origin": "https://evil.example.com"})
    assert cross_site.status_code == 403
    same_machine = post(jarvis, INITIALIZE, {"Origin": f"http://localhost:{jarvis.port}"})
    assert same_machine.status_code == 200


def test_request_body_is_bounded(jarvis: RunningJarvis) -> None:
    huge = dict(INITIALIZE, params={**INITIALIZE["params"], "padding": "x" * (2 * 1024 * 1024)})  # type: ignore[dict-item]
    assert post(jarvis, huge).status_code == 413


async def test_loopback_without_token_but_bad_token_still_refused(jarvis: RunningJarvis) -> None:
    async with mcp_client(jarvis.url()) as client:
        assert len((await client.list_tools()).tools) == 8
    assert post(jarvis, INITIALIZE, {"Authorization": "Bearer jv_wrong"}).status_code == 401


async def test_scoped_tool_error_inside_session(secured: RunningJarvis) -> None:
    token = secured.create_token("jarvis:jarvis_config")
    async with mcp_client(secured.url(), token) as client:
        result_json(await client.call_tool("jarvis_config", {"action": "list"}))
        # A call the gate cannot attribute (renamed tool) still never runs anything.
        renamed = await client.call_tool("jarvis_server_list", {})
        assert "renamed" in error_text(renamed)
