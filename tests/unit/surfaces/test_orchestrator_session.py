"""The orchestrator's `session` tool over an in-memory runtime: spawn, read events, get, list, end."""

from __future__ import annotations

import pytest

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.orchestrator import session
from jarvis.aggregator.tooling.principal import LOCAL_ADMIN
from jarvis.aggregator.views.runtime import EventView
from jarvis.common.errors import InvalidArgument, NotFound
from tests.unit.surfaces.fakes import FakeRuntime, project_view

pytestmark = pytest.mark.anyio

SURFACE = "orchestrator"


@pytest.fixture
def shop(runtime: FakeRuntime) -> str:
    runtime.projects["p1"] = project_view("p1", "shop", agent="codex")
    return "p1"


async def test_spawn_asks_the_runtime_for_the_session(ctx: ToolContext, runtime: FakeRuntime, shop: str) -> None:
    spawned = await session.build(ctx).call(
        {"action": "spawn", "project_id": shop, "prompt": "fix the build", "workspace_id": "w7"}, LOCAL_ADMIN, SURFACE
    )
    assert runtime.called("spawn_session") == [
        {"project_id": shop, "workspace_id": "w7", "prompt": "fix the build", "agent": ""}
    ]
    assert spawned.session.project_id == shop
    assert spawned.session.workspace_id == "w7"
    assert spawned.session.state == "running"
    assert spawned.session.agent == "codex"  # the project's agent, none being named


async def test_spawn_in_a_missing_project_is_not_found(ctx: ToolContext) -> None:
    with pytest.raises(NotFound, match="project 'p404'"):
        await session.build(ctx).call({"action": "spawn", "project_id": "p404"}, LOCAL_ADMIN, SURFACE)


async def test_events_after_a_cursor(ctx: ToolContext, runtime: FakeRuntime, shop: str) -> None:
    tool = session.build(ctx)
    spawned = (await tool.call({"action": "spawn", "project_id": shop, "prompt": "go"}, LOCAL_ADMIN, SURFACE)).session
    runtime.events[spawned.id] += [EventView(2, "text", None, "thinking"), EventView(3, "result", None, {"ok": 1})]

    first = await tool.call(
        {"action": "events", "project_id": shop, "session_id": spawned.id, "limit": 2}, LOCAL_ADMIN, SURFACE
    )
    assert [e.seq for e in first.events] == [1, 2]
    assert first.events[0].payload == {"prompt": "go"}
    assert first.next_cursor == 2

    rest = await tool.call(
        {"action": "events", "project_id": shop, "session_id": spawned.id, "after": first.next_cursor, "wait": 1.5},
        LOCAL_ADMIN,
        SURFACE,
    )
    assert [e.type for e in rest.events] == ["result"]
    assert runtime.called("session_events")[-1]["wait"] == 1.5


async def test_events_by_the_session_id_alone(ctx: ToolContext, runtime: FakeRuntime, shop: str) -> None:
    """session_id names the session, and the runtime finds its project (issue 37 item 9)."""
    tool = session.build(ctx)
    spawned = (await tool.call({"action": "spawn", "project_id": shop, "prompt": "go"}, LOCAL_ADMIN, SURFACE)).session
    page = await tool.call({"action": "events", "session_id": spawned.id}, LOCAL_ADMIN, SURFACE)
    assert [e.seq for e in page.events] == [1]
    assert runtime.called("session_events")[-1]["project_id"] == ""


async def test_events_wait_is_bounded(ctx: ToolContext, runtime: FakeRuntime, shop: str) -> None:
    with pytest.raises(InvalidArgument, match="wait"):
        await session.build(ctx).call(
            {"action": "events", "project_id": shop, "session_id": "s1", "wait": 60}, LOCAL_ADMIN, SURFACE
        )
    assert runtime.called("session_events") == []


async def test_get_list_and_end(ctx: ToolContext, runtime: FakeRuntime, shop: str) -> None:
    tool = session.build(ctx)
    spawned = (await tool.call({"action": "spawn", "project_id": shop}, LOCAL_ADMIN, SURFACE)).session
    got = await tool.call({"action": "get", "project_id": shop, "session_id": spawned.id}, LOCAL_ADMIN, SURFACE)
    assert got == spawned
    listed = await tool.call({"action": "list", "project_id": shop}, LOCAL_ADMIN, SURFACE)
    assert (listed.count, [s.id for s in listed.sessions]) == (1, [spawned.id])

    ended = await tool.call(
        {"action": "end", "project_id": shop, "session_id": spawned.id, "force": True}, LOCAL_ADMIN, SURFACE
    )
    assert ended.session.state == "ended"
    assert runtime.called("end_session") == [{"project_id": shop, "session_id": spawned.id, "force": True}]


async def test_get_of_a_missing_session_is_not_found(ctx: ToolContext, shop: str) -> None:
    with pytest.raises(NotFound, match="session 's404'"):
        await session.build(ctx).call({"action": "get", "project_id": shop, "session_id": "s404"}, LOCAL_ADMIN, SURFACE)
