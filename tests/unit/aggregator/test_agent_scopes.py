"""What an agent's credential may do (decision 0057): the spawner's scopes bound to the session's project, never
wider; whose a schedule is; when a person's standing refuses a token."""

from __future__ import annotations

import pytest

from jarvis.aggregator.oauth.agents import agent_scopes, project_scopes
from jarvis.aggregator.oauth.standing import Standing, schedule_owner, standing_of
from jarvis.scheduler.domain.runs import schedule_owner as scheduler_schedule_owner


@pytest.mark.parametrize(
    ("granted", "bound"),
    [
        (["orchestrator"], ("orchestrator@p1",)),
        (["admin"], ("orchestrator@p1", "jarvis@p1")),
        (["*"], ("orchestrator@p1", "jarvis@p1")),
        (["read"], ("orchestrator:read@p1", "jarvis:read@p1")),
        (["orchestrator:session"], ("orchestrator:session@p1",)),
        (["orchestrator@p1"], ("orchestrator@p1",)),
        (["orchestrator@p2"], ()),  # another project's scope reaches nothing here
        (["metrics"], ()),
        (
            ["jarvis:jarvis_check_status", "orchestrator:container:exec"],
            ("jarvis:jarvis_check_status@p1", "orchestrator:container:exec@p1"),
        ),
    ],
)
def test_an_agents_scopes_are_the_spawners_bound_to_the_project(granted: list[str], bound: tuple[str, ...]) -> None:
    assert set(project_scopes(granted, "p1")) == set(bound)


@pytest.mark.parametrize(
    ("granted", "scopes"),
    [
        (["orchestrator", "profile:notes"], ("orchestrator@p1", "profile:notes")),
        (["orchestrator", "servers:github:search"], ("orchestrator@p1", "servers:github:search")),
        (["admin"], ("orchestrator@p1", "jarvis@p1", "profile", "servers")),
        (["orchestrator", "profile@p2"], ("orchestrator@p1",)),  # a bound downstream scope reaches no server
        (["orchestrator", "share:notes"], ("orchestrator@p1",)),  # shares are no agent's to use
        (["orchestrator", "read"], ("orchestrator@p1", "jarvis:read@p1")),
    ],
)
def test_an_agent_also_calls_downstream_servers_its_spawner_may_call(
    granted: list[str], scopes: tuple[str, ...]
) -> None:
    """Downstream servers' tools name no project, so their scopes stay unbound (issue 32 item 5, decision 0058); a
    `read` scope gives none of them, since downstream annotations are never trusted."""
    assert set(agent_scopes(granted, "p1")) == set(scopes)


@pytest.mark.parametrize(
    ("created_by", "owner"),
    [
        ("alice@example.com (user:alice)", "alice"),
        ("Alice (Ops) (user:a-1)", "a-1"),
        ("ci (tok_123)", ""),
        ("local", ""),
        ("", ""),
        ("user:bob", "bob"),
    ],
)
def test_a_schedules_owner_is_the_person_who_created_it(created_by: str, owner: str) -> None:
    assert schedule_owner(created_by) == owner
    assert scheduler_schedule_owner(created_by) == owner  # the scheduler reads it the same way


def test_standing_refuses_the_disabled_and_tokens_from_before_a_disable() -> None:
    assert Standing(disabled=False, not_before=0).refusal(100) is None
    assert "disabled" in str(Standing(disabled=True, not_before=0).refusal(100))
    assert "before" in str(Standing(disabled=False, not_before=200).refusal(100))
    assert Standing(disabled=False, not_before=200).refusal(200) is None
    assert standing_of(None) == Standing(disabled=False, not_before=0)
    assert standing_of({"disabled": True, "not_before": 5}) == Standing(disabled=True, not_before=5)
