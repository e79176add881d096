"""`jarvis_profile` over an in-memory registry: what each action asks the registry, and what it answers."""

from __future__ import annotations

import pytest

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.jarvis import profiles
from jarvis.aggregator.tooling.principal import LOCAL_ADMIN, principal_from_token
from jarvis.common.errors import InvalidArgument, NotFound, PermissionDenied
from tests.unit.surfaces.fakes import PROJECT_ROOT, FakeRegistry, server

pytestmark = pytest.mark.anyio


@pytest.fixture
def installed(registry: FakeRegistry) -> FakeRegistry:
    registry.add(server("github"), server("postgres"), server("slack"))
    return registry


async def test_create_then_list(ctx: ToolContext, installed: FakeRegistry) -> None:
    tool = profiles.build(ctx)
    created = await tool.call(
        {"action": "create", "name": "web", "servers": ["postgres", "github"], "description": "web work"},
        LOCAL_ADMIN,
        "jarvis",
    )
    assert created.created.servers == ["github", "postgres"]
    assert installed.called("create_profile") == [
        {"name": "web", "description": "web work", "servers": ["postgres", "github"]}
    ]

    listed = await tool.call({"action": "list"}, LOCAL_ADMIN, "jarvis")
    assert listed.count == 1
    assert [(p.name, p.description, p.servers) for p in listed.profiles] == [
        ("web", "web work", ["github", "postgres"])
    ]


async def test_create_with_a_server_not_installed_names_it_and_creates_nothing(
    ctx: ToolContext, installed: FakeRegistry
) -> None:
    with pytest.raises(NotFound, match="nonexistent"):
        await profiles.build(ctx).call(
            {"action": "create", "name": "web", "servers": ["github", "nonexistent"]}, LOCAL_ADMIN, "jarvis"
        )
    assert installed.profiles == {}


async def test_create_needs_a_name(ctx: ToolContext, installed: FakeRegistry) -> None:
    with pytest.raises(InvalidArgument, match="requires 'name'"):
        await profiles.build(ctx).call({"action": "create", "servers": ["github"]}, LOCAL_ADMIN, "jarvis")
    assert installed.called("create_profile") == []


async def test_edit_adds_and_removes_servers(ctx: ToolContext, installed: FakeRegistry) -> None:
    tool = profiles.build(ctx)
    await tool.call({"action": "create", "name": "web", "servers": ["github", "postgres"]}, LOCAL_ADMIN, "jarvis")
    edited = await tool.call(
        {"action": "edit", "name": "web", "add": ["slack"], "remove": ["postgres"]}, LOCAL_ADMIN, "jarvis"
    )
    assert edited.edited.servers == ["github", "slack"]
    assert installed.called("edit_profile") == [
        {"name": "web", "add": ["slack"], "remove": ["postgres"], "new_name": None, "description": None}
    ]


async def test_edit_renames(ctx: ToolContext, installed: FakeRegistry) -> None:
    tool = profiles.build(ctx)
    await tool.call({"action": "create", "name": "web", "servers": ["github"]}, LOCAL_ADMIN, "jarvis")
    edited = await tool.call({"action": "edit", "name": "web", "new_name": "frontend"}, LOCAL_ADMIN, "jarvis")
    assert edited.edited.name == "frontend"
    assert list(installed.profiles) == ["frontend"]


async def test_edit_that_changes_nothing_is_refused_before_the_registry(
    ctx: ToolContext, installed: FakeRegistry
) -> None:
    with pytest.raises(InvalidArgument, match="needs add, remove, new_name or description"):
        await profiles.build(ctx).call({"action": "edit", "name": "web"}, LOCAL_ADMIN, "jarvis")
    assert installed.called("edit_profile") == []


async def test_edit_adding_a_missing_server_is_not_found(ctx: ToolContext, installed: FakeRegistry) -> None:
    tool = profiles.build(ctx)
    await tool.call({"action": "create", "name": "web", "servers": ["github"]}, LOCAL_ADMIN, "jarvis")
    with pytest.raises(NotFound, match="nonexistent"):
        await tool.call({"action": "edit", "name": "web", "add": ["nonexistent"]}, LOCAL_ADMIN, "jarvis")
    assert installed.profiles["web"].servers == ["github"]


async def test_delete(ctx: ToolContext, installed: FakeRegistry) -> None:
    tool = profiles.build(ctx)
    await tool.call({"action": "create", "name": "web", "servers": ["github"]}, LOCAL_ADMIN, "jarvis")
    deleted = await tool.call({"action": "delete", "name": "web"}, LOCAL_ADMIN, "jarvis")
    assert deleted.deleted.name == "web"
    assert (await tool.call({"action": "list"}, LOCAL_ADMIN, "jarvis")).count == 0


async def test_delete_of_a_missing_profile_is_not_found(ctx: ToolContext) -> None:
    with pytest.raises(NotFound, match="profile 'ghost' not found"):
        await profiles.build(ctx).call({"action": "delete", "name": "ghost"}, LOCAL_ADMIN, "jarvis")


async def test_suggest_defaults_to_the_project_root(ctx: ToolContext, registry: FakeRegistry) -> None:
    suggested = await profiles.build(ctx).call({"action": "suggest"}, LOCAL_ADMIN, "jarvis")
    assert suggested.project == str(PROJECT_ROOT)
    assert registry.called("suggest_profiles") == [{"project_dir": str(PROJECT_ROOT)}]


async def test_restart_without_a_host_reports_each_server_not_restarted(
    ctx: ToolContext, installed: FakeRegistry
) -> None:
    tool = profiles.build(ctx)
    await tool.call({"action": "create", "name": "web", "servers": ["github", "postgres"]}, LOCAL_ADMIN, "jarvis")
    restarted = await tool.call({"action": "restart", "name": "web"}, LOCAL_ADMIN, "jarvis")
    [outcome] = restarted.restarted
    assert outcome.profile == "web"
    assert [s.name for s in outcome.servers] == ["github", "postgres"]
    assert all(s.outcome.startswith("not restarted") for s in outcome.servers)


async def test_a_read_only_token_may_list_but_not_create(ctx: ToolContext, installed: FakeRegistry) -> None:
    reader = principal_from_token("tok-r", "reader", ["jarvis:read"])
    tool = profiles.build(ctx)
    assert (await tool.call({"action": "list"}, reader, "jarvis")).count == 0
    with pytest.raises(PermissionDenied, match="jarvis_profile action=create"):
        await tool.call({"action": "create", "name": "web"}, reader, "jarvis")
    assert installed.called("create_profile") == []
