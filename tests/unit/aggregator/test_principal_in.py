"""Who a handler believes is calling when the gate put nobody in the request: over stdio the local user, over HTTP
nobody at all (issue 34: an HTTP request that slipped past the gate was served as the local admin)."""

from __future__ import annotations

from jarvis.aggregator.tooling.principal import LOCAL_ADMIN, NOBODY, principal_from_token
from jarvis.aggregator.tooling.request import PRINCIPAL_SCOPE_KEY, principal_in


def test_an_http_request_the_gate_did_not_resolve_is_nobody() -> None:
    caller = principal_in({"type": "http", "path": "/mcp/profile/p"})
    assert caller is NOBODY
    assert not caller.local
    assert caller.scopes == ()
    assert not caller.may("profile", "p", None, read_only=False, admin=False)
    assert not caller.may_use_surface("jarvis")


def test_stdio_is_the_local_user_and_a_gate_resolved_caller_is_kept() -> None:
    assert principal_in({}) is LOCAL_ADMIN
    alice = principal_from_token("t1", "alice", ["read"])
    assert principal_in({"type": "http", PRINCIPAL_SCOPE_KEY: alice}) is alice
    assert principal_in({"type": "http", PRINCIPAL_SCOPE_KEY: LOCAL_ADMIN}) is LOCAL_ADMIN
