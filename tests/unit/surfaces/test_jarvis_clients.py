"""`jarvis_client action=edit` over an in-memory registry: names sorted into servers, profiles and Jarvis's own
surfaces (issue 37 item 3), and where tokens are required, one token scoped to exactly the new entries that the
caller could reach itself."""

from __future__ import annotations

import pytest

from jarvis.aggregator.surfaces.jarvis import clients
from jarvis.aggregator.tooling.principal import LOCAL_ADMIN, Principal, principal_from_token
from jarvis.common.errors import FailedPrecondition, InvalidArgument, NotFound, PermissionDenied
from tests.unit.surfaces.fakes import FakeRegistry, context

pytestmark = pytest.mark.anyio

SURFACE = "jarvis"
EDIT = {"action": "edit", "name": "cursor", "add": ["time", "profile:core", "Jarvis", "discovery"]}


async def test_names_are_servers_profiles_or_surfaces(registry: FakeRegistry) -> None:
    done = await clients.build(context(registry)).call(EDIT, LOCAL_ADMIN, SURFACE)
    [edit] = registry.client_edits
    assert (edit.add_servers, edit.add_profiles, edit.add_surfaces) == (["time"], ["core"], ["jarvis", "discovery"])
    assert edit.authorization == ""  # loopback, no token needed
    assert done.added == ["time", "jarvis-core", "jarvis", "discovery"]
    removal = {"action": "edit", "name": "cursor", "remove": ["debug", "profile:core", "fetch"]}
    await clients.build(context(registry)).call(removal, LOCAL_ADMIN, SURFACE)
    removed = registry.client_edits[-1]
    assert (removed.remove_servers, removed.remove_profiles, removed.remove_surfaces) == (
        ["fetch"],
        ["core"],
        ["debug"],
    )


async def test_an_edit_with_no_names_says_what_names_are(registry: FakeRegistry) -> None:
    with pytest.raises(InvalidArgument, match=r"profile:<name> for a profile, or one of Jarvis's own surfaces"):
        await clients.build(context(registry)).call({"action": "edit", "name": "cursor"}, LOCAL_ADMIN, SURFACE)


async def test_where_tokens_are_required_the_entries_get_one_of_their_own(registry: FakeRegistry) -> None:
    caller = principal_from_token("t1", "dev", ["jarvis", "discovery", "profile:core", "servers:time"])
    await clients.build(context(registry, auth_mode="token required")).call(EDIT, caller, SURFACE)
    [made] = registry.tokens.values()
    assert made.scopes == ["profile:core", "servers:time", "jarvis", "discovery"]
    assert made.name == "client:cursor:core,time,jarvis,discovery"
    assert registry.client_edits[0].authorization == "Bearer jv_1_secret"


async def test_an_edit_never_grants_more_than_the_caller_has(registry: FakeRegistry) -> None:
    caller = principal_from_token("t1", "dev", ["jarvis:jarvis_client", "profile:core"])
    tool = clients.build(context(registry, auth_mode="token required"))
    with pytest.raises(PermissionDenied, match="your token does not hold servers:time, jarvis, discovery"):
        await tool.call(EDIT, caller, SURFACE)
    assert registry.tokens == {}
    assert registry.client_edits == []


async def test_a_refused_edit_revokes_the_token_it_made(registry: FakeRegistry) -> None:
    registry.client_edit_error = FailedPrecondition("the file is not valid JSON")
    with pytest.raises(FailedPrecondition):
        await clients.build(context(registry, auth_mode="token required")).call(EDIT, LOCAL_ADMIN, SURFACE)
    assert registry.called("revoke_token") == [{"token_id": "tok1"}]


async def test_a_name_that_is_no_server_is_told_what_names_an_entry_takes(registry: FakeRegistry) -> None:
    registry.client_edit_error = NotFound("server 'core' is not installed; jarvis_server action=list shows them")
    edit = {"action": "edit", "name": "cursor", "add": ["core"]}
    with pytest.raises(NotFound, match=r"server 'core' is not installed; .*; a client entry names .*profile:<name>"):
        await clients.build(context(registry)).call(edit, LOCAL_ADMIN, SURFACE)


async def test_a_signed_in_caller_gets_entries_without_a_token_for_a_client_that_signs_in(
    registry: FakeRegistry,
) -> None:
    """Issue 48 item 4: a caller who signed in shows Jarvis serves sign-in; Claude Code then signs in itself, while
    Gemini CLI (which shows an entry without a token Disconnected) still gets a token of its own."""
    person = Principal(token_id="user:alice", name="alice", scopes=("jarvis", "discovery"), user="alice")
    tool = clients.build(context(registry, auth_mode="token required"))
    add = {"action": "edit", "add": ["jarvis", "discovery"]}
    done = await tool.call({**add, "name": "claude-code"}, person, SURFACE)
    assert registry.client_edits[0].authorization == ""
    assert registry.tokens == {}
    assert done.notes == [
        "these entries carry no token: claude-code signs in to Jarvis (run /mcp in Claude Code and choose "
        "Authenticate for each entry)"
    ]
    await tool.call({**add, "name": "gemini"}, person, SURFACE)
    assert registry.client_edits[1].authorization == "Bearer jv_1_secret"
    # A `jv_` token says nothing of sign-in: its entries carry a token, whatever the client.
    await tool.call({**add, "name": "claude-code"}, principal_from_token("t1", "ci", ["jarvis", "discovery"]), SURFACE)
    assert registry.client_edits[2].authorization == "Bearer jv_2_secret"
