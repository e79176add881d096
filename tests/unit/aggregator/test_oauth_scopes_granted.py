"""What a signed-in person's client gets: the intersection of the scopes it asked for with the person's role scopes,
in the scope lattice (issue 31 item 2, decision 0055)."""

from __future__ import annotations

from jarvis.aggregator.oauth.server.people import Role, meet, narrowed
from jarvis.aggregator.oauth.upstream import Identity


def test_asked_scopes_are_kept_where_a_role_covers_them() -> None:
    granted = ("jarvis", "orchestrator@p1")
    assert narrowed(granted, ["jarvis:jarvis_server", "jarvis:jarvis_config:list@p2"]) == (
        "jarvis:jarvis_server",
        "jarvis:jarvis_config:list@p2",
    )
    # One asked scope inside another adds nothing.
    assert narrowed(granted, ["jarvis:jarvis_server", "jarvis:jarvis_server:list@p2"]) == ("jarvis:jarvis_server",)
    assert narrowed(("jarvis", "read"), ["jarvis"]) == ("jarvis",)
    assert narrowed(granted, ["orchestrator@p1", "orchestrator@p2", "orchestrator"]) == ("orchestrator@p1",)
    assert narrowed(granted, ["debug", "Not A Scope"]) == ()
    assert narrowed(granted, []) == granted
    assert narrowed(("admin",), ["debug", "jarvis"]) == ("debug", "jarvis")


def test_a_role_narrower_than_the_asked_scope_grants_its_own_scope() -> None:
    # Bob's client asks for `jarvis` (the scope the 401 named); his role grants one tool of it: he gets that tool.
    assert narrowed(("jarvis:jarvis_check_status",), ["jarvis"]) == ("jarvis:jarvis_check_status",)
    assert narrowed(("jarvis:jarvis_check_status", "orchestrator"), ["jarvis", "offline"]) == (
        "jarvis:jarvis_check_status",
    )
    # Asking for everything gives all the person has, never more.
    assert narrowed(("jarvis", "orchestrator@p1"), ["admin"]) == ("jarvis", "orchestrator@p1")
    # Two narrower role scopes inside one asked scope both come through.
    assert narrowed(("jarvis:a", "jarvis:b:list", "debug"), ["jarvis"]) == ("jarvis:a", "jarvis:b:list")
    # Nothing in common, nothing granted.
    assert narrowed(("jarvis:jarvis_check_status",), ["orchestrator", "jarvis:jarvis_server"]) == ()


def test_meet_is_the_intersection_in_the_scope_lattice() -> None:
    assert meet("jarvis", "jarvis:x") == "jarvis:x"
    assert meet("jarvis:x", "jarvis") == "jarvis:x"
    assert meet("jarvis:x", "jarvis:y") is None
    # Projects: one bound scope binds the meet; two different projects share nothing.
    assert meet("orchestrator@p1", "orchestrator:session") == "orchestrator:session@p1"
    assert meet("orchestrator:session", "orchestrator@p1") == "orchestrator:session@p1"
    assert meet("orchestrator@p1", "orchestrator@p2") is None
    # read: every surface's read-only actions.
    assert meet("read", "jarvis") == "jarvis:read"
    assert meet("jarvis", "read@p1") == "jarvis:read@p1"
    assert meet("read", "jarvis:read") == "jarvis:read"
    assert meet("read", "jarvis:jarvis_server") is None
    # admin and * cover all; metrics is its own and never bound to a project.
    assert meet("admin", "metrics") == "metrics"
    assert meet("metrics", "jarvis") is None
    assert meet("admin", "*") == "*"
    assert meet("*", "jarvis@p1") == "jarvis@p1"


def test_a_role_covers_its_groups_and_named_users() -> None:
    role = Role("dev", groups=("dev",), users=("carol@example.test",), scopes=("jarvis",))
    assert role.covers(Identity("alice", "alice@example.test", "Alice", ("dev",)))
    assert role.covers(Identity("carol", "carol@example.test", "Carol", ()))
    assert not role.covers(Identity("bob", "bob@example.test", "Bob", ("ops",)))
    assert not role.covers(Identity("eve", "", "Eve", ()))
