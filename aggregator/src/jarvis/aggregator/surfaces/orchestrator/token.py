"""`token`: the registry's access tokens (the secret is shown once): create, list, revoke."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.aggregator.views.registry import TokenView
from jarvis.common.params import Arg

SHOWN_ONCE = "the secret is shown once; Jarvis keeps only its hash"
# A century: beyond it an expiry is "never" (0), and a larger number overflowed the registry's int64 request field.
MAX_EXPIRES_IN = 100 * 365 * 24 * 3600


@dataclass(frozen=True)
class Create:
    scope: Annotated[str, Arg("space-separated, e.g. orchestrator:session@<project_id>")]
    name: str = ""
    expires_in: Annotated[int, Arg("s", minimum=0, maximum=MAX_EXPIRES_IN)] = 0


@dataclass(frozen=True)
class ListTokens:
    all: Annotated[bool, Arg("include revoked")] = False


@dataclass(frozen=True)
class Revoke:
    token_id: str


@dataclass(frozen=True)
class Created:
    token: TokenView
    secret: str
    note: str


@dataclass(frozen=True)
class TokenList:
    tokens: list[TokenView]
    count: int


@dataclass(frozen=True)
class Revoked:
    revoked: TokenView


@dataclass(frozen=True)
class TokenActions:
    ctx: ToolContext

    async def create(self, p: Create, _: Principal) -> Created:
        scopes = [x for x in re.split(r"[\s,]+", p.scope) if x]
        created = await self.ctx.registry.create_token(p.name or "orchestrator", scopes, p.expires_in)
        return Created(created.token, created.secret, SHOWN_ONCE)

    async def list_(self, p: ListTokens, _: Principal) -> TokenList:
        tokens = await self.ctx.registry.list_tokens(p.all)
        return TokenList(tokens, len(tokens))

    async def revoke(self, p: Revoke, _: Principal) -> Revoked:
        return Revoked(await self.ctx.registry.revoke_token(p.token_id))


def build(ctx: ToolContext) -> Tool:
    a = TokenActions(ctx)
    return Tool(
        name="token",
        description="Access tokens: create|list|revoke",
        summary=(
            "Access tokens, bearer tokens for calling Jarvis with scopes and an expiry: create one, list them, "
            "revoke one."
        ),
        actions=[
            # Minting or revoking credentials is an administrator's act, whatever else a token may do.
            Action("create", a.create, Create, admin=True),
            Action("list", a.list_, ListTokens, read_only=True, idempotent=True),
            Action("revoke", a.revoke, Revoke, destructive=True, idempotent=True, admin=True),
        ],
    )
