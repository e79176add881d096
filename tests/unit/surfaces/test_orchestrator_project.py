"""The orchestrator's `project` tool over an in-memory runtime: projects, their owners, and write-only secrets."""

from __future__ import annotations

import json

import pytest

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.orchestrator import project
from jarvis.aggregator.surfaces.orchestrator.common import NO_RUNTIME
from jarvis.aggregator.tooling.principal import LOCAL_ADMIN, principal_from_token
from jarvis.aggregator.tooling.results import jsonable
from jarvis.common.errors import FailedPrecondition, InvalidArgument, NotFound, PermissionDenied
from tests.unit.surfaces.fakes import FakeRegistry, FakeRuntime, context

pytestmark = pytest.mark.anyio

SURFACE = "orchestrator"
AGENT = principal_from_token("tok-a", "agent", ["orchestrator"])


async def test_create_passes_the_spec_and_its_owner(ctx: ToolContext, runtime: FakeRuntime) -> None:
    created = await project.build(ctx).call(
        {
            "action": "create",
            "name": "shop",
            "source_url": "https://git.example/shop.git",
            "egress_allow": ["pypi.org"],
            "agent_protocol": "codex-json",
        },
        AGENT,
        SURFACE,
    )
    assert created.created.name == "shop"
    assert created.created.git is True
    [asked] = runtime.called("create_project")
    assert asked == {
        "name": "shop",
        "source_url": "https://git.example/shop.git",
        "image": "",
        "agent_command": [],
        "agent_protocol": "codex-json",
        "network": False,
        "egress_allow": ["pypi.org"],
        "agent": "",
        "created_by": "tok-a",
        "uncapped": False,  # the runtime's per-token caps apply to a token that is not an admin
    }


async def test_only_an_admin_creates_a_project_on_the_bridge_network(ctx: ToolContext, runtime: FakeRuntime) -> None:
    with pytest.raises(PermissionDenied, match="network=true needs an admin token"):
        await project.build(ctx).call({"action": "create", "name": "shop", "network": True}, AGENT, SURFACE)
    assert runtime.called("create_project") == []
    created = await project.build(ctx).call({"action": "create", "name": "shop", "network": True}, LOCAL_ADMIN, SURFACE)
    assert created.created.network is True


async def test_list_get_delete(ctx: ToolContext, runtime: FakeRuntime) -> None:
    tool = project.build(ctx)
    first = (await tool.call({"action": "create", "name": "a"}, LOCAL_ADMIN, SURFACE)).created
    second = (await tool.call({"action": "create", "name": "b"}, LOCAL_ADMIN, SURFACE)).created
    assert runtime.called("create_project")[0]["uncapped"] is True

    listed = await tool.call({"action": "list"}, LOCAL_ADMIN, SURFACE)
    assert (listed.count, [p.name for p in listed.projects]) == (2, ["a", "b"])
    assert (await tool.call({"action": "get", "project_id": second.id}, LOCAL_ADMIN, SURFACE)).name == "b"

    deleted = await tool.call({"action": "delete", "project_id": first.id}, LOCAL_ADMIN, SURFACE)
    assert deleted.deleted.project_id == first.id
    assert deleted.deleted.container_removed is True
    assert list(runtime.projects) == [second.id]


async def test_get_of_a_missing_project_is_not_found(ctx: ToolContext) -> None:
    with pytest.raises(NotFound, match="project 'p404' not found"):
        await project.build(ctx).call({"action": "get", "project_id": "p404"}, LOCAL_ADMIN, SURFACE)


async def test_get_needs_a_project_id(ctx: ToolContext) -> None:
    with pytest.raises(InvalidArgument, match="requires 'project_id'"):
        await project.build(ctx).call({"action": "get"}, LOCAL_ADMIN, SURFACE)


async def test_secret_set_stores_the_value_and_never_answers_it(ctx: ToolContext, runtime: FakeRuntime) -> None:
    tool = project.build(ctx)
    created = (await tool.call({"action": "create", "name": "a"}, LOCAL_ADMIN, SURFACE)).created
    value = "sk-live-0123456789"
    stored = await tool.call(
        {"action": "secret_set", "project_id": created.id, "name": "OPENAI_API_KEY", "value": value},
        LOCAL_ADMIN,
        SURFACE,
    )
    assert runtime.secrets[(created.id, "OPENAI_API_KEY")] == value
    assert stored.stored.name == "OPENAI_API_KEY"
    assert value not in json.dumps(jsonable(stored))

    listed = await tool.call({"action": "secret_list", "project_id": created.id}, LOCAL_ADMIN, SURFACE)
    assert [s.name for s in listed.secrets] == ["OPENAI_API_KEY"]
    assert value not in json.dumps(jsonable(listed))

    await tool.call(
        {"action": "secret_delete", "project_id": created.id, "name": "OPENAI_API_KEY"}, LOCAL_ADMIN, SURFACE
    )
    assert runtime.secrets == {}


async def test_a_project_bound_token_reaches_its_project_only(ctx: ToolContext, runtime: FakeRuntime) -> None:
    tool = project.build(ctx)
    mine = (await tool.call({"action": "create", "name": "mine"}, LOCAL_ADMIN, SURFACE)).created
    other = (await tool.call({"action": "create", "name": "other"}, LOCAL_ADMIN, SURFACE)).created
    bound = principal_from_token("tok-b", "bound", [f"orchestrator@{mine.id}"])

    assert (await tool.call({"action": "get", "project_id": mine.id}, bound, SURFACE)).name == "mine"
    with pytest.raises(PermissionDenied):
        await tool.call({"action": "get", "project_id": other.id}, bound, SURFACE)
    with pytest.raises(PermissionDenied):
        await tool.call({"action": "delete", "project_id": other.id}, bound, SURFACE)
    with pytest.raises(PermissionDenied):  # a listing names no project
        await tool.call({"action": "list"}, bound, SURFACE)
    assert other.id in runtime.projects


async def test_without_a_runtime_every_action_says_how_to_add_one(registry: FakeRegistry) -> None:
    tool = project.build(context(registry, runtime=None))
    with pytest.raises(FailedPrecondition) as refused:
        await tool.call({"action": "list"}, LOCAL_ADMIN, SURFACE)
    assert str(refused.value) == NO_RUNTIME
