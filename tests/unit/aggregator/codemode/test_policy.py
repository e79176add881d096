"""code_run per scope (so per role): off, or limited; scopes add up, they never take away."""

from __future__ import annotations

from jarvis.aggregator.codemode.limits import CodePolicy, RunLimits, ScopeLimits, within
from jarvis.common.scopes import covers

POLICY = CodePolicy(
    per_scope=(
        ("read", ScopeLimits(enabled=False)),
        ("jarvis", ScopeLimits(calls=10, timeout=5)),
        ("orchestrator", ScopeLimits(calls=20, concurrent=2)),
    )
)


def test_off_for_everyone() -> None:
    assert CodePolicy(enabled=False).limits_for(("admin",)) is None


def test_off_for_a_role_whose_scopes_are_all_off() -> None:
    assert POLICY.limits_for(("read",)) is None


def test_a_listed_scope_narrows_the_defaults() -> None:
    limits = POLICY.limits_for(("jarvis",))
    assert limits is not None
    assert (limits.calls, limits.timeout, limits.max_timeout, limits.concurrent) == (10, 5, 5, 8)


def test_several_listed_scopes_get_the_most_any_allows() -> None:
    limits = POLICY.limits_for(("read", "jarvis", "orchestrator"))
    assert limits is not None
    assert (limits.calls, limits.concurrent, limits.timeout) == (20, 8, 30)


def test_an_unlisted_scope_keeps_the_defaults() -> None:
    assert POLICY.limits_for(("read", "admin")) == RunLimits()
    assert CodePolicy().limits_for(("read",)) == RunLimits()


def test_a_caller_cannot_ask_for_more_wall_time_than_its_limit() -> None:
    limits = POLICY.limits_for(("jarvis",))
    assert limits is not None
    assert limits.wall_time(600) == 5
    assert limits.wall_time(None) == 5


def test_a_role_applies_to_every_narrower_form_of_its_scope() -> None:
    """Issue 44 finding 7: `{"read": {"enabled": false}}` refused only the exact scope `read`, while `read@<project>`
    and `jarvis:read` (narrower forms of it in the scope lattice) ran."""
    for narrower in ("read@p1a2b3c4d5", "jarvis:read", "orchestrator:read@p1a2b3c4d5"):
        assert POLICY.limits_for((narrower,)) is None, narrower
    bound = POLICY.limits_for(("jarvis:jarvis_config:list@p1a2b3c4d5",))
    assert bound is not None
    assert (bound.calls, bound.timeout) == (10, 5)


def test_a_scope_under_several_roles_takes_the_most_restrictive() -> None:
    # `jarvis:read` is within `read` (off) and within `jarvis` (limited): each is a ceiling, so it is off.
    assert POLICY.limits_for(("jarvis:read",)) is None
    tighter = CodePolicy(
        per_scope=(("jarvis", ScopeLimits(calls=10)), ("jarvis:jarvis_config", ScopeLimits(calls=30, timeout=2)))
    )
    limits = tighter.limits_for(("jarvis:jarvis_config:set",))
    assert limits is not None
    assert (limits.calls, limits.timeout) == (10, 2)


def test_a_wider_or_other_projects_scope_is_not_under_a_role() -> None:
    bound_role = CodePolicy(per_scope=(("read@p1a2b3c4d5", ScopeLimits(enabled=False)),))
    assert bound_role.limits_for(("read",)) == RunLimits()
    assert bound_role.limits_for(("read@p2b3c4d5e6",)) == RunLimits()
    assert bound_role.limits_for(("jarvis:read@p1a2b3c4d5",)) is None


def test_a_token_without_a_scope_that_calls_a_tool_runs_nothing() -> None:
    # CodeMode passes only the scopes that reach a tool; none left means no run, never the defaults.
    assert CodePolicy().limits_for(()) is None


SCOPES = (
    "admin",
    "*",
    "read",
    "metrics",
    "jarvis",
    "jarvis:read",
    "jarvis:jarvis_config",
    "jarvis:jarvis_config:list",
    "orchestrator",
    "orchestrator:read",
    "servers",
    "servers:github",
    "share:github",
    "read@p1a2b3c4d5",
    "jarvis@p1a2b3c4d5",
    "jarvis:read@p1a2b3c4d5",
    "jarvis:jarvis_config@p2b3c4d5e6",
)


def test_within_is_the_scope_lattice_that_sign_in_narrows_by() -> None:
    """`within` asks `allows`; sign-in's `covers` (decision 0055) is the same order, written over the grammar."""
    for scope in SCOPES:
        for role in SCOPES:
            assert within(scope, role) == covers(role, scope), (scope, role)
