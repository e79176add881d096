"""The orchestrator's `schedule` tool over an in-memory scheduler: what it creates, and which schedules a
project-bound token sees and may change (only through the schedule's targets)."""

from __future__ import annotations

import pytest

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.gateways.scheduler import ScheduleChanges
from jarvis.aggregator.surfaces.orchestrator import schedule
from jarvis.aggregator.tooling.principal import LOCAL_ADMIN, principal_from_token
from jarvis.common.errors import FailedPrecondition, InvalidArgument, NotFound, PermissionDenied
from tests.unit.surfaces.fakes import FakeRegistry, FakeScheduler, context, schedule_view

pytestmark = pytest.mark.anyio

SURFACE = "orchestrator"
BOUND_TO_A = principal_from_token("tok-a", "ci for a", ["orchestrator:schedule@pa"])


@pytest.fixture
def schedules(scheduler: FakeScheduler) -> FakeScheduler:
    scheduler.add(
        schedule_view("only-a", ["pa"]),
        schedule_view("only-b", ["pb"]),
        schedule_view("a-and-b", ["pa", "pb"]),
    )
    return scheduler


async def test_create_passes_the_schedule_and_its_creator(ctx: ToolContext, scheduler: FakeScheduler) -> None:
    created = await schedule.build(ctx).call(
        {
            "action": "create",
            "cron": "0 3 * * 1-5",
            "prompt": "run the nightly tests",
            "targets": ["pa"],
            "secret_overrides": {"GITHUB_TOKEN": "ci_token"},
        },
        BOUND_TO_A,
        SURFACE,
    )
    [asked] = scheduler.called("create_schedule")
    assert asked == {
        "name": "",
        "cron": "0 3 * * 1-5",
        "timezone": "",
        "prompt": "run the nightly tests",
        "targets": ["pa"],
        "enabled": None,  # the scheduler's default
        "concurrency": "",
        "missed": "",
        "created_by": "ci for a (tok-a)",
        "secret_overrides": {"GITHUB_TOKEN": "ci_token"},
    }
    assert created.created.schedule.targets == ["pa"]
    assert created.created.next_fires == ["2026-01-02T03:00:00Z"]


async def test_create_on_a_project_the_token_does_not_reach_is_refused(
    ctx: ToolContext, scheduler: FakeScheduler
) -> None:
    with pytest.raises(PermissionDenied):
        await schedule.build(ctx).call(
            {"action": "create", "cron": "0 3 * * *", "prompt": "p", "targets": ["pa", "pb"]}, BOUND_TO_A, SURFACE
        )
    assert scheduler.called("create_schedule") == []


async def test_list_shows_an_admin_every_schedule_and_filters_by_target(
    ctx: ToolContext, schedules: FakeScheduler
) -> None:
    tool = schedule.build(ctx)
    everything = await tool.call({"action": "list"}, LOCAL_ADMIN, SURFACE)
    assert (everything.count, [s.id for s in everything.schedules]) == (3, ["only-a", "only-b", "a-and-b"])

    for_b = await tool.call({"action": "list", "targets": ["pb"]}, LOCAL_ADMIN, SURFACE)
    assert [s.id for s in for_b.schedules] == ["only-b", "a-and-b"]
    assert schedules.called("list_schedules")[-1] == {"target": "pb"}  # one target: the scheduler filters


async def test_a_project_bound_token_lists_only_schedules_all_of_whose_targets_it_reaches(
    ctx: ToolContext, schedules: FakeScheduler
) -> None:
    listed = await schedule.build(ctx).call({"action": "list"}, BOUND_TO_A, SURFACE)
    assert [s.id for s in listed.schedules] == ["only-a"]


async def test_get(ctx: ToolContext, schedules: FakeScheduler) -> None:
    tool = schedule.build(ctx)
    detail = await tool.call({"action": "get", "schedule_id": "only-a"}, BOUND_TO_A, SURFACE)
    assert detail.schedule.id == "only-a"
    # A schedule the token cannot see is not found, not forbidden: its existence is not disclosed.
    with pytest.raises(NotFound, match="schedule 'a-and-b' not found"):
        await tool.call({"action": "get", "schedule_id": "a-and-b"}, BOUND_TO_A, SURFACE)


async def test_update_changes_only_what_is_given(ctx: ToolContext, schedules: FakeScheduler) -> None:
    updated = await schedule.build(ctx).call(
        {"action": "update", "schedule_id": "only-a", "enabled": False}, BOUND_TO_A, SURFACE
    )
    assert schedules.called("update_schedule") == [{"schedule_id": "only-a", "changes": ScheduleChanges(enabled=False)}]
    assert updated.updated.schedule.enabled is False
    assert updated.updated.schedule.cron == "0 3 * * *"


async def test_update_that_changes_nothing_is_refused(ctx: ToolContext, schedules: FakeScheduler) -> None:
    with pytest.raises(InvalidArgument, match="changes nothing"):
        await schedule.build(ctx).call({"action": "update", "schedule_id": "only-a"}, LOCAL_ADMIN, SURFACE)
    assert schedules.called("update_schedule") == []


async def test_delete_and_trigger_need_every_target(ctx: ToolContext, schedules: FakeScheduler) -> None:
    tool = schedule.build(ctx)
    with pytest.raises(NotFound):
        await tool.call({"action": "delete", "schedule_id": "a-and-b"}, BOUND_TO_A, SURFACE)
    assert "a-and-b" in schedules.schedules

    triggered = await tool.call({"action": "trigger", "schedule_id": "a-and-b"}, LOCAL_ADMIN, SURFACE)
    assert (triggered.count, [r.target for r in triggered.runs]) == (2, ["pa", "pb"])
    deleted = await tool.call({"action": "delete", "schedule_id": "only-a"}, BOUND_TO_A, SURFACE)
    assert deleted.deleted.schedule_id == "only-a"
    assert "only-a" not in schedules.schedules


async def test_without_a_scheduler_nothing_is_created(registry: FakeRegistry) -> None:
    tool = schedule.build(context(registry, scheduler=None))
    with pytest.raises(FailedPrecondition, match="cannot create the schedule: the scheduler service is not part"):
        await tool.call(
            {"action": "create", "cron": "0 3 * * *", "prompt": "p", "targets": ["pa"]}, LOCAL_ADMIN, SURFACE
        )
