"""Scope grammar `<surface>[:<tool>[:<action>]]`, `<surface>:read`, `read`, `admin`, `*`, and what each allows."""

from __future__ import annotations

import pytest

from jarvis.common.errors import InvalidArgument
from jarvis.common.scopes import (
    allows,
    reaches_surface,
    reads_metrics,
    uncovered,
    validate_scope,
    validate_scopes,
)


@pytest.mark.parametrize(
    "scope",
    [
        "jarvis",
        "jarvis:jarvis_server",
        "jarvis:jarvis_server:list",
        "orchestrator:project:create",
        "read",
        "admin",
        "*",
        "debug:debug",
        "jarvis:read",
    ],
)
def test_valid_scopes(scope: str) -> None:
    assert validate_scope(scope) == scope


def test_scopes_are_lowered_and_deduplicated() -> None:
    assert validate_scopes(["Jarvis", "jarvis", " read "]) == ("jarvis", "read")


@pytest.mark.parametrize("scope", ["", "jarvis:", ":x", "a:b:c:d", "jar vis", "jarvis:*", "9lives", "x;y"])
def test_invalid_scopes_state_the_grammar(scope: str) -> None:
    with pytest.raises(InvalidArgument) as exc:
        validate_scope(scope)
    assert "<surface>[:<tool>[:<action>]]" in exc.value.message


@pytest.mark.parametrize(
    ("scopes", "call", "read_only", "expected"),
    [
        (["admin"], ("orchestrator", "project", "delete"), False, True),
        (["*"], ("jarvis", "jarvis_server", "install"), False, True),
        (["read"], ("jarvis", "jarvis_server", "list"), True, True),
        (["read"], ("jarvis", "jarvis_server", "install"), False, False),
        (["jarvis"], ("jarvis", "jarvis_profile", "delete"), False, True),
        (["jarvis:jarvis_server"], ("jarvis", "jarvis_server", "edit"), False, True),
        (["jarvis:jarvis_server"], ("jarvis", "jarvis_profile", "list"), True, False),
        (["jarvis:jarvis_server:list"], ("jarvis", "jarvis_server", "list"), True, True),
        (["jarvis:jarvis_server:list"], ("jarvis", "jarvis_server", "install"), False, False),
        (["orchestrator:project:create"], ("jarvis", "jarvis_server", "list"), True, False),
        (["jarvis:read"], ("jarvis", "jarvis_config", "list"), True, True),
        (["jarvis:read"], ("jarvis", "jarvis_config", "set"), False, False),
        (["jarvis:read"], ("orchestrator", "project", "list"), True, False),
    ],
)
def test_allows(scopes: list[str], call: tuple[str, str, str], read_only: bool, expected: bool) -> None:
    assert allows(scopes, *call, read_only=read_only) is expected


@pytest.mark.parametrize(
    ("scopes", "expected"),
    [
        (["admin"], True),
        (["*"], True),
        (["jarvis"], False),
        (["jarvis:jarvis_server:create"], False),
        (["jarvis:read"], False),
        (["read"], False),
        (["jarvis:jarvis_server"], False),
    ],
)
def test_admin_actions_need_admin(scopes: list[str], expected: bool) -> None:
    assert allows(scopes, "jarvis", "jarvis_server", "create", read_only=False, admin=True) is expected


def test_reaches_surface() -> None:
    assert reaches_surface(["jarvis:jarvis_server:list"], "jarvis")
    assert reaches_surface(["read"], "orchestrator")
    assert not reaches_surface(["orchestrator"], "jarvis")


@pytest.mark.parametrize(
    "scope", ["orchestrator@p0123456789ab", "orchestrator:session:spawn@p1", "read@p1", "orchestrator:read@p1"]
)
def test_project_bound_scopes_are_valid(scope: str) -> None:
    assert validate_scope(scope) == scope


@pytest.mark.parametrize(
    "scope", ["admin@p1", "*@p1", "orchestrator@", "orchestrator@../x", "orchestrator@p1@p2", "@p1"]
)
def test_invalid_project_bound_scopes(scope: str) -> None:
    with pytest.raises(InvalidArgument):
        validate_scope(scope)


def test_a_project_bound_scope_allows_only_its_project() -> None:
    scopes = ["orchestrator@pa"]
    assert allows(scopes, "orchestrator", "session", "spawn", read_only=False, project="pa")
    assert not allows(scopes, "orchestrator", "session", "spawn", read_only=False, project="pb")
    assert not allows(scopes, "orchestrator", "project", "list", read_only=True)  # names no project
    assert not allows(scopes, "orchestrator", "image_rebuild", None, read_only=False, admin=True, project="pa")
    reader = ["read@pa"]
    assert allows(reader, "orchestrator", "session", "events", read_only=True, project="pa")
    assert not allows(reader, "orchestrator", "container", "exec", read_only=False, project="pa")
    assert reaches_surface(["orchestrator:session@pa"], "orchestrator")
    assert not reaches_surface(["orchestrator@pa"], "jarvis")


@pytest.mark.parametrize("scope", ["metrics:servers", "metrics:read", "metrics@p1a2b3c4d5"])
def test_the_metrics_scope_takes_no_tool_action_or_project(scope: str) -> None:
    with pytest.raises(InvalidArgument, match="takes no tool, action or project"):
        validate_scope(scope)


def test_only_metrics_and_admin_read_metrics_and_metrics_reads_nothing_else() -> None:
    assert validate_scope("METRICS") == "metrics"
    assert [reads_metrics([s]) for s in ("metrics", "admin", "*")] == [True, True, True]
    assert [reads_metrics([s]) for s in ("read", "jarvis", "jarvis:read")] == [False, False, False]
    for surface in ("jarvis", "orchestrator", "debug", "servers"):
        assert not reaches_surface(["metrics"], surface)
        assert not allows(["metrics"], surface, "any", "list", read_only=True)


def test_the_admin_surface_is_reached_by_admin_alone_and_no_scope_names_it() -> None:
    """Its every action is an admin's (people and roles, decision 0069): `read` or a scope naming the surface would
    reach a listing it could call nothing of, so neither reaches it, and a scope naming it is refused as made."""
    assert reaches_surface(["admin"], "admin")
    assert reaches_surface(["*"], "admin")
    assert not reaches_surface(["read"], "admin")
    assert not reaches_surface(["orchestrator", "jarvis"], "admin")
    for named in ("admin:user", "admin:read", "admin:role:set"):
        with pytest.raises(InvalidArgument, match="needs the 'admin' scope itself"):
            validate_scope(named)
    assert allows(["admin"], "admin", "user", "list", read_only=True, admin=True)
    assert not allows(["read"], "admin", "user", "list", read_only=True, admin=True)


@pytest.mark.parametrize(
    ("held", "wanted"),
    [
        (["admin"], "*"),
        (["*"], "orchestrator:token:create"),
        (["jarvis"], "jarvis:jarvis_server:list"),
        (["jarvis"], "jarvis:read"),
        (["read"], "jarvis:read"),
        (["read"], "read@p1"),
        (["orchestrator"], "orchestrator:session@p1"),
        (["orchestrator@p1"], "orchestrator:session@p1"),
        (["metrics"], "metrics"),
        (["profile:web"], "profile:web"),
    ],
)
def test_what_a_maker_holds_covers_a_token_that_allows_no_more(held: list[str], wanted: str) -> None:
    assert uncovered(held, [wanted]) == []


@pytest.mark.parametrize(
    ("held", "wanted"),
    [
        (["jarvis"], "admin"),
        (["read"], "*"),
        (["jarvis:read"], "jarvis"),
        (["jarvis:read"], "jarvis:jarvis_server"),
        (["read"], "jarvis"),
        (["jarvis"], "read"),
        (["orchestrator@p1"], "orchestrator"),
        (["orchestrator@p1"], "orchestrator@p2"),
        (["read@p1"], "read"),
        (["read"], "metrics"),
        (["metrics"], "read"),
        (["profile:web"], "profile"),
        (["jarvis:jarvis_server:list"], "jarvis:jarvis_server"),
    ],
)
def test_a_token_asking_more_than_its_maker_holds_is_named(held: list[str], wanted: str) -> None:
    assert uncovered(held, [wanted]) == [wanted]


def test_uncovered_names_what_a_token_would_add_in_order() -> None:
    assert uncovered(["jarvis", "read"], ["jarvis:jarvis_server", "orchestrator", "jarvis:read", "admin"]) == [
        "orchestrator",
        "admin",
    ]
