"""The `jarvis` surface's tool listing: exactly eight tools within the budgets of spec 000."""

from __future__ import annotations

import json

import pytest

from tests.support.stack import RunningJarvis, mcp_client

pytestmark = pytest.mark.anyio

EXPECTED = {
    "jarvis_check_status": [],
    "jarvis_server": [
        "list",
        "info",
        "install",
        "uninstall",
        "search",
        "edit",
        "create",
        "usage",
        "connect",
        "disconnect",
    ],
    "jarvis_profile": ["list", "create", "edit", "delete", "suggest", "restart"],
    "jarvis_client": ["list", "edit", "import", "config"],
    "jarvis_config": ["get", "set", "list", "migrate"],
    "jarvis_project": ["analyze", "diff", "devops"],
    "jarvis_system": ["bootstrap", "restart", "restart_infra"],
    "jarvis_share": ["start", "stop", "list"],
}


async def test_exactly_eight_prefixed_tools_under_budget(jarvis: RunningJarvis) -> None:
    async with mcp_client(jarvis.url()) as client:
        listed = await client.list_tools()
    names = [t.name for t in listed.tools]
    assert sorted(names) == sorted(EXPECTED)
    assert all(n.startswith("jarvis_") for n in names)
    compact = json.dumps(listed.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":"))
    assert len(compact.encode()) < 4000, len(compact.encode())


async def test_descriptions_short_and_name_their_actions(jarvis: RunningJarvis) -> None:
    async with mcp_client(jarvis.url()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for name, actions in EXPECTED.items():
        description = tools[name].description or ""
        assert len(description) <= 60, (name, description)
        for action in actions:
            assert action in description, (name, action, description)
        schema = tools[name].input_schema
        assert schema["type"] == "object"
        if actions:
            assert schema["properties"]["action"]["enum"] == actions


async def test_annotations_follow_what_actions_do(jarvis: RunningJarvis) -> None:
    async with mcp_client(jarvis.url()) as client:
        tools = {t.name: t.annotations for t in (await client.list_tools()).tools}
    status = tools["jarvis_check_status"]
    assert status is not None
    assert (status.read_only_hint, status.destructive_hint, status.idempotent_hint) == (True, False, True)
    for modifying in (
        "jarvis_server",
        "jarvis_profile",
        "jarvis_client",
        "jarvis_config",
        "jarvis_project",
        "jarvis_system",
        "jarvis_share",
    ):
        annotations = tools[modifying]
        assert annotations is not None, modifying
        assert annotations.read_only_hint is False, modifying
    server = tools["jarvis_server"]
    assert server is not None
    assert server.destructive_hint is True
    assert server.idempotent_hint is False  # install/create


async def test_modern_protocol_client_sees_the_same_tools(jarvis: RunningJarvis) -> None:
    async with mcp_client(jarvis.url(), mode="auto") as client:
        assert client.protocol_version >= "2026"
        listed = await client.list_tools()
    assert len(listed.tools) == 8
