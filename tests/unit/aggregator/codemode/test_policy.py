"""code_run per scope (so per role): off, or limited; scopes add up, they never take away."""

from __future__ import annotations

from jarvis.aggregator.codemode.limits import CodePolicy, RunLimits, ScopeLimits

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
