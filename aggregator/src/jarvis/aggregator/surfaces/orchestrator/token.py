"""`token`: the registry's access tokens (the secret is shown once): create, list, revoke."""

from __future__ import annotations

import re
from typing import Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.gateways.registry import to_dict
from jarvis.aggregator.tooling import schema as s
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.api.registry.v1 import registry_pb2 as pb


def build(ctx: ToolContext) -> Tool:
    reg = ctx.registry

    async def create(a: dict[str, Any], _: Principal) -> Any:
        scopes = [x for x in re.split(r"[\s,]+", a["scope"]) if x]
        req = pb.CreateTokenRequest(
            name=a.get("name") or "orchestrator", scopes=scopes, expires_in_seconds=a.get("expires_in", 0)
        )
        resp = await reg.call(reg.registry.CreateToken, req)
        return {
            "token": to_dict(resp.token),
            "secret": resp.secret,
            "note": "the secret is shown once; Jarvis keeps only its hash",
        }

    async def list_(a: dict[str, Any], _: Principal) -> Any:
        resp = await reg.call(reg.registry.ListTokens, pb.ListTokensRequest(include_revoked=a.get("all", False)))
        return {"tokens": [to_dict(t) for t in resp.tokens], "count": len(resp.tokens)}

    async def revoke(a: dict[str, Any], _: Principal) -> Any:
        return {"revoked": to_dict(await reg.call(reg.registry.RevokeToken, pb.RevokeTokenRequest(id=a["token_id"])))}

    return Tool(
        name="token",
        description="Access tokens: create|list|revoke",
        properties={
            "scope": s.string("space-separated, e.g. orchestrator:session@<project_id>"),
            "name": s.string(),
            "expires_in": s.integer("s", minimum=0),
            "token_id": s.string(),
            "all": s.boolean("include revoked"),
        },
        actions=[
            # Minting or revoking credentials is an administrator's act, whatever else a token may do.
            Action("create", create, required=("scope",), admin=True),
            Action("list", list_, read_only=True, idempotent=True),
            Action("revoke", revoke, destructive=True, idempotent=True, required=("token_id",), admin=True),
        ],
    )
