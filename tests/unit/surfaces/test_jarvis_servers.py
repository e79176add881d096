"""`jarvis_server` over an in-memory registry: listings and info never show a secret, writes ask the registry for
exactly what the caller gave, and the admin-only actions refuse other tokens."""

from __future__ import annotations

import json

import pytest

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.downstream.hosting import report
from jarvis.aggregator.downstream.hosting.report import NOT_HOSTED
from jarvis.aggregator.gateways.registry import ServerEdit
from jarvis.aggregator.surfaces.jarvis import servers
from jarvis.aggregator.tooling.principal import LOCAL_ADMIN, principal_from_token
from jarvis.aggregator.tooling.results import jsonable
from jarvis.aggregator.views.registry import AuditEntryView, UsageStatView
from jarvis.common.errors import InvalidArgument, NotFound, PermissionDenied
from tests.unit.surfaces.fakes import FakeRegistry, launch, server

pytestmark = pytest.mark.anyio

SECRETS = ("s3cret-env", "bearer-header-secret", "url-password", "query-key", "error-password")
JARVIS_USER = principal_from_token("tok-j", "jarvis user", ["jarvis"])


@pytest.fixture
def remote(registry: FakeRegistry) -> FakeRegistry:
    """One HTTP server whose launch spec and last error hold credentials, and one stdio server."""
    registry.add(
        server(
            "remote",
            launch(
                "TRANSPORT_STREAMABLE_HTTP",
                url="https://bot:url-password@mcp.example.com/mcp?api_key=query-key&region=eu",
                env={"API_KEY": "s3cret-env", "UNSET": "", "HOME_TOKEN": "${HOME_TOKEN}"},
                headers={"Authorization": "Bearer bearer-header-secret"},
            ),
            last_error="connect to https://bot:error-password@mcp.example.com/mcp failed",
        ),
        server("local", launch(command="uvx", args=["mcp-local", "--stdio"])),
    )
    return registry


def text(result: object) -> str:
    """The result as the agent reads it."""
    return json.dumps(jsonable(result))


async def test_list_summarises_each_server_without_its_secrets(ctx: ToolContext, remote: FakeRegistry) -> None:
    listed = await servers.build(ctx).call({"action": "list"}, LOCAL_ADMIN, "jarvis")
    assert listed.count == 2
    by_name = {s.name: s for s in listed.servers}
    assert by_name["remote"].transport == "streamable-http"
    assert by_name["remote"].launch == "https://***@mcp.example.com/mcp?api_key=***&region=eu"
    assert by_name["local"].transport == "stdio"
    assert by_name["local"].launch == "uvx mcp-local --stdio"
    # Nothing is hosted in this process: the host's view, not the registry's, says what runs.
    assert by_name["local"].status == "stopped"
    assert by_name["local"].last_error == NOT_HOSTED
    assert not any(secret in text(listed) for secret in SECRETS)


async def test_info_masks_env_and_header_values_and_url_credentials(ctx: ToolContext, remote: FakeRegistry) -> None:
    info = await servers.build(ctx).call({"action": "info", "name": "remote"}, LOCAL_ADMIN, "jarvis")
    assert info.launch.env == {"API_KEY": servers.SET, "UNSET": servers.EMPTY, "HOME_TOKEN": "${HOME_TOKEN}"}
    assert info.launch.headers == {"Authorization": servers.SET}
    assert info.launch.url == "https://***@mcp.example.com/mcp?api_key=***&region=eu"
    assert info.last_error == "connect to https://***@mcp.example.com/mcp failed"
    assert info.status == "stopped"
    assert info.runtime == report.RuntimeReport(state="stopped", note=NOT_HOSTED)
    assert not any(secret in text(info) for secret in SECRETS)


async def test_info_of_a_missing_server_is_not_found(ctx: ToolContext, remote: FakeRegistry) -> None:
    with pytest.raises(NotFound, match="ghost"):
        await servers.build(ctx).call({"action": "info", "name": "ghost"}, LOCAL_ADMIN, "jarvis")


async def test_create_with_an_unknown_type_is_refused_before_the_registry(
    ctx: ToolContext, registry: FakeRegistry
) -> None:
    with pytest.raises(InvalidArgument, match="parameter 'type'"):
        await servers.build(ctx).call(
            {"action": "create", "name": "x", "type": "websocket", "url": "wss://x"}, LOCAL_ADMIN, "jarvis"
        )
    assert registry.called("create_server") == []


async def test_create_passes_the_launch_spec_and_answers_it_masked(ctx: ToolContext, registry: FakeRegistry) -> None:
    changed: list[None] = []

    async def on_change(event: None) -> None:
        changed.append(event)

    ctx.events.catalog_changed.connect(on_change)
    created = await servers.build(ctx).call(
        {
            "action": "create",
            "name": "tool",
            "type": "stdio",
            "command": "uvx",
            "env": {"TOKEN": "s3cret-env", "DROPPED": None},
        },
        LOCAL_ADMIN,
        "jarvis",
    )
    [asked] = registry.called("create_server")
    # A null env value sets nothing; args not given are none, not absent.
    assert asked["env"] == {"TOKEN": "s3cret-env"}
    assert asked["args"] == []
    assert asked["transport"] == "stdio"
    assert created.created.launch.env == {"TOKEN": servers.SET}
    assert "s3cret-env" not in text(created)
    assert changed == [None]  # discovery hears of the new server


async def test_create_needs_admin(ctx: ToolContext, registry: FakeRegistry) -> None:
    with pytest.raises(PermissionDenied):
        await servers.build(ctx).call(
            {"action": "create", "name": "tool", "type": "stdio", "command": "uvx"}, JARVIS_USER, "jarvis"
        )
    assert registry.called("create_server") == []


async def test_edit_sets_and_unsets_env(ctx: ToolContext, remote: FakeRegistry) -> None:
    edited = await servers.build(ctx).call(
        {"action": "edit", "name": "remote", "env": {"NEW": "v", "API_KEY": None}}, LOCAL_ADMIN, "jarvis"
    )
    assert remote.called("edit_server") == [
        {"edit": ServerEdit(name="remote", set_env={"NEW": "v"}, unset_env=["API_KEY"])}
    ]
    assert set(edited.edited.launch.env) == {"NEW", "UNSET", "HOME_TOKEN"}
    assert edited.edited.launch.env["NEW"] == servers.SET


async def test_edit_that_changes_nothing_is_refused(ctx: ToolContext, remote: FakeRegistry) -> None:
    with pytest.raises(InvalidArgument, match="needs something to change"):
        await servers.build(ctx).call({"action": "edit", "name": "remote"}, LOCAL_ADMIN, "jarvis")
    assert remote.called("edit_server") == []


async def test_uninstall_reports_the_profiles_it_left(ctx: ToolContext, remote: FakeRegistry) -> None:
    await remote.create_profile("web", "", ["remote", "local"])
    uninstalled = await servers.build(ctx).call({"action": "uninstall", "name": "remote"}, LOCAL_ADMIN, "jarvis")
    assert uninstalled.uninstalled.removed_from_profiles == ["web"]
    assert "remote" not in remote.servers


async def test_usage_flushes_recorded_calls_before_reading(ctx: ToolContext, registry: FakeRegistry) -> None:
    registry.stats = [UsageStatView("jarvis_server", "list", 3, 0, 1.5, 2.0)]
    ctx.usage.record("jarvis_server", "list", True, 1.0)
    report = await servers.build(ctx).call({"action": "usage", "name": "jarvis_server"}, JARVIS_USER, "jarvis")
    assert [r.tool for r in registry.recorded] == ["jarvis_server"]
    assert report.usage == registry.stats
    assert report.audit is None
    assert registry.called("usage") == [{"tool": "jarvis_server"}]


async def test_the_audit_log_needs_admin(ctx: ToolContext, registry: FakeRegistry) -> None:
    entry = AuditEntryView(
        1, "project", "create", True, 3.0, None, "tok-j", "jarvis user", "orchestrator", "", "ok", {}
    )
    registry.audit_entries = [entry]
    tool = servers.build(ctx)
    with pytest.raises(PermissionDenied, match="audit=true needs a token with the admin scope"):
        await tool.call({"action": "usage", "audit": True}, JARVIS_USER, "jarvis")
    assert registry.called("audit") == []
    report = await tool.call({"action": "usage", "audit": True, "query": "tok-j", "limit": 5}, LOCAL_ADMIN, "jarvis")
    assert report.audit == [entry]
    assert registry.called("audit") == [{"tool": "", "token": "tok-j", "limit": 5}]
