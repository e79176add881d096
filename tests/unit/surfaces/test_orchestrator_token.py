"""The orchestrator's `token` tool over an in-memory registry: minting and revoking are an admin's."""

from __future__ import annotations

import pytest

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.orchestrator import token
from jarvis.aggregator.tooling.principal import LOCAL_ADMIN, principal_from_token
from jarvis.common.errors import PermissionDenied
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
        {"name": "orchestrator", "scopes": ["orchestrator:session@p1", "read"], "expires_in_seconds": 3600}
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
