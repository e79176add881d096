"""The orchestrator's `token` tool over an in-memory registry: minting and revoking are an admin's, but a person at the
console makes, lists and revokes their own, which act for them and do no more than they may."""

from __future__ import annotations

import pytest

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.orchestrator import token
from jarvis.aggregator.tooling.principal import CONSOLE, LOCAL_ADMIN, Principal, principal_from_token
from jarvis.common.errors import NotFound, PermissionDenied
from tests.unit.surfaces.fakes import FakeRegistry

pytestmark = pytest.mark.anyio

SURFACE = "orchestrator"
ORCHESTRATOR_USER = principal_from_token("tok-o", "orchestrator user", ["orchestrator"])


async def test_create_needs_admin(ctx: ToolContext, registry: FakeRegistry) -> None:
    with pytest.raises(PermissionDenied, match="token action=create"):
        await token.build(ctx).call({"action": "create", "scope": "admin"}, ORCHESTRATOR_USER, SURFACE)
    assert registry.called("create_token") == []


async def test_create_splits_the_scopes_and_shows_the_secret_once(ctx: ToolContext, registry: FakeRegistry) -> None:
    admin = principal_from_token("tok-admin", "ops", ["admin"])
    created = await token.build(ctx).call(
        {"action": "create", "scope": "orchestrator:session@p1,  read", "expires_in": 3600}, admin, SURFACE
    )
    assert registry.called("create_token") == [
        {"name": "orchestrator", "scopes": ["orchestrator:session@p1", "read"], "expires_in_seconds": 3600, "owner": ""}
    ]
    assert created.secret == "jv_1_secret"
    assert created.note == token.SHOWN_ONCE
    assert created.token.scopes == ["orchestrator:session@p1", "read"]


async def test_list_hides_revoked_tokens_unless_asked(ctx: ToolContext, registry: FakeRegistry) -> None:
    tool = token.build(ctx)
    kept = (await tool.call({"action": "create", "scope": "read", "name": "kept"}, LOCAL_ADMIN, SURFACE)).token
    gone = (await tool.call({"action": "create", "scope": "read", "name": "gone"}, LOCAL_ADMIN, SURFACE)).token
    revoked = await tool.call({"action": "revoke", "token_id": gone.id}, LOCAL_ADMIN, SURFACE)
    assert revoked.revoked.revoked_at is not None

    listed = await tool.call({"action": "list"}, ORCHESTRATOR_USER, SURFACE)
    assert [t.id for t in listed.tokens] == [kept.id]
    assert "_secret" not in repr(listed)  # a listing never carries a secret, only its prefix
    everything = await tool.call({"action": "list", "all": True}, ORCHESTRATOR_USER, SURFACE)
    assert everything.count == 2


async def test_revoke_needs_admin(ctx: ToolContext, registry: FakeRegistry) -> None:
    created = (await token.build(ctx).call({"action": "create", "scope": "read"}, LOCAL_ADMIN, SURFACE)).token
    with pytest.raises(PermissionDenied):
        await token.build(ctx).call({"action": "revoke", "token_id": created.id}, ORCHESTRATOR_USER, SURFACE)
    assert registry.tokens[created.id].revoked_at is None


def _person(name: str, scopes: list[str], via: str = CONSOLE) -> Principal:
    return Principal(token_id=f"user:{name}", name=f"{name}@example.com", scopes=tuple(scopes), user=name, via=via)


async def test_a_person_at_the_console_makes_lists_and_revokes_their_own(
    ctx: ToolContext, registry: FakeRegistry
) -> None:
    tool = token.build(ctx)
    alice, bob = _person("alice", ["jarvis", "read"]), _person("bob", ["jarvis"])
    made = await tool.call({"action": "create", "scope": "jarvis:jarvis_server", "name": "laptop"}, alice, SURFACE)
    assert made.token.owner == "alice"
    await tool.call({"action": "create", "scope": "jarvis", "name": "bobs"}, bob, SURFACE)
    machine = await tool.call({"action": "create", "scope": "read", "name": "ci"}, LOCAL_ADMIN, SURFACE)
    assert machine.token.owner == ""
    assert [t.name for t in (await tool.call({"action": "list"}, alice, SURFACE)).tokens] == ["laptop"]
    with pytest.raises(NotFound):  # bob names alice's token: not his, so not found
        await tool.call({"action": "revoke", "token_id": made.token.id}, bob, SURFACE)
    assert registry.tokens[made.token.id].revoked_at is None
    await tool.call({"action": "revoke", "token_id": made.token.id}, alice, SURFACE)
    assert registry.tokens[made.token.id].revoked_at is not None


async def test_a_persons_token_asks_no_more_than_they_hold(ctx: ToolContext, registry: FakeRegistry) -> None:
    with pytest.raises(PermissionDenied, match="you do not hold orchestrator, admin"):
        await token.build(ctx).call(
            {"action": "create", "scope": "jarvis orchestrator admin"}, _person("alice", ["jarvis"]), SURFACE
        )
    assert registry.called("create_token") == []


@pytest.mark.parametrize(
    "arguments",
    [{"action": "create", "scope": "jarvis", "machine": True}, {"action": "list", "everyone": True}],
)
async def test_a_machines_token_and_everyones_list_stay_an_admins(
    ctx: ToolContext, registry: FakeRegistry, arguments: dict[str, object]
) -> None:
    with pytest.raises(PermissionDenied):
        await token.build(ctx).call(arguments, _person("alice", ["jarvis"]), SURFACE)
    assert registry.called("create_token") == []


async def test_only_the_console_is_self_service(ctx: ToolContext, registry: FakeRegistry) -> None:
    """A client's or an agent's credential for alice makes no token for her: a prompt an agent read must not mint a
    lasting credential."""
    for via in ("token claude-code", "session s1", "token laptop"):
        with pytest.raises(PermissionDenied):
            await token.build(ctx).call(
                {"action": "create", "scope": "jarvis"}, _person("alice", ["jarvis"], via), SURFACE
            )
    assert registry.called("create_token") == []
