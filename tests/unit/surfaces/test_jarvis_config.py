"""`jarvis_config` over an in-memory registry: get, set, list, and the keys only an admin may set."""

from __future__ import annotations

import pytest

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.jarvis import config
from jarvis.aggregator.tooling.principal import LOCAL_ADMIN, principal_from_token
from jarvis.common.errors import InvalidArgument, PermissionDenied
from tests.unit.surfaces.fakes import FakeRegistry

pytestmark = pytest.mark.anyio

JARVIS_USER = principal_from_token("tok-j", "jarvis user", ["jarvis"])


async def test_get(ctx: ToolContext, registry: FakeRegistry) -> None:
    entry = await config.build(ctx).call({"action": "get", "key": "discovery.default_limit"}, LOCAL_ADMIN, "jarvis")
    assert (entry.key, entry.value) == ("discovery.default_limit", 5)


async def test_get_of_an_unknown_key_is_the_registry_refusal(ctx: ToolContext) -> None:
    with pytest.raises(InvalidArgument, match="unknown config key 'nope'"):
        await config.build(ctx).call({"action": "get", "key": "nope"}, LOCAL_ADMIN, "jarvis")


async def test_set_then_list(ctx: ToolContext, registry: FakeRegistry) -> None:
    tool = config.build(ctx)
    answer = await tool.call({"action": "set", "key": "discovery.default_limit", "value": 9}, JARVIS_USER, "jarvis")
    assert (answer.set.key, answer.set.value) == ("discovery.default_limit", 9)
    assert registry.called("set_config") == [{"key": "discovery.default_limit", "value": 9}]
    listing = await tool.call({"action": "list"}, principal_from_token("tok-r", "reader", ["read"]), "jarvis")
    assert {e.key: e.value for e in listing.config}["discovery.default_limit"] == 9


async def test_set_keeps_json_values_as_given(ctx: ToolContext, registry: FakeRegistry) -> None:
    registry.config["servers.autostart_profiles"] = []
    await config.build(ctx).call(
        {"action": "set", "key": "servers.autostart_profiles", "value": ["web", "db"]}, LOCAL_ADMIN, "jarvis"
    )
    assert registry.config["servers.autostart_profiles"] == ["web", "db"]


@pytest.mark.parametrize("key", ["aggregator_url", " aggregator_url "])
async def test_only_an_admin_sets_the_aggregator_url(ctx: ToolContext, registry: FakeRegistry, key: str) -> None:
    tool = config.build(ctx)
    with pytest.raises(PermissionDenied, match="jarvis_config action=set"):
        await tool.call({"action": "set", "key": key, "value": "https://evil.example"}, JARVIS_USER, "jarvis")
    assert registry.called("set_config") == []
    assert registry.config["aggregator_url"] == "http://127.0.0.1:8765"

    await tool.call({"action": "set", "key": key, "value": "https://jarvis.example"}, LOCAL_ADMIN, "jarvis")
    assert registry.config["aggregator_url"] == "https://jarvis.example"


async def test_a_read_only_token_cannot_set(ctx: ToolContext, registry: FakeRegistry) -> None:
    with pytest.raises(PermissionDenied):
        await config.build(ctx).call(
            {"action": "set", "key": "discovery.default_limit", "value": 9},
            principal_from_token("tok-r", "reader", ["jarvis:read"]),
            "jarvis",
        )
    assert registry.config["discovery.default_limit"] == 5


async def test_set_to_an_empty_list(ctx: ToolContext, registry: FakeRegistry) -> None:
    """An empty list is a value, not a missing argument: a list setting can be cleared."""
    registry.config["servers.interactive"] = ["slack"]
    await config.build(ctx).call({"action": "set", "key": "servers.interactive", "value": []}, LOCAL_ADMIN, "jarvis")
    assert registry.config["servers.interactive"] == []
