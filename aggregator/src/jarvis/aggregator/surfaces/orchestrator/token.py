"""`token`: the registry's access tokens (the secret is shown once): create, list, revoke.

A person's token acts for them (decision 0071): it names them as its owner, may do no more than they could when it was
made, and, where it is used, no more than their roles allow then. A person manages their own tokens at the console
(`self_service`); a machine's token (no owner) is an admin's to make or revoke.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.aggregator.views.registry import TokenView
from jarvis.common.errors import PermissionDenied
from jarvis.common.params import Arg
from jarvis.common.scopes import uncovered

SHOWN_ONCE = "the secret is shown once; Jarvis keeps only its hash"
# A century: beyond it an expiry is "never" (0), and a larger number overflowed the registry's int64 request field.
MAX_EXPIRES_IN = 100 * 365 * 24 * 3600


@dataclass(frozen=True)
class Create:
    scope: Annotated[str, Arg("space-separated, e.g. orchestrator:session@<project_id>")]
    name: str = ""
    expires_in: Annotated[int, Arg("s", minimum=0, maximum=MAX_EXPIRES_IN)] = 0
    machine: Annotated[bool, Arg("a machine's token, acting for no person (admin)")] = False


@dataclass(frozen=True)
class ListTokens:
    all: Annotated[bool, Arg("include revoked")] = False
    everyone: Annotated[bool, Arg("every person's and machine's, not only yours (admin)")] = False


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

    async def create(self, p: Create, principal: Principal) -> Created:
        scopes = [x for x in re.split(r"[\s,]+", p.scope) if x]
        beyond = uncovered(principal.scopes, scopes)
        if beyond:  # a token is never a way to more than its maker holds
            raise PermissionDenied(
                f"a token may do no more than you: you do not hold {', '.join(beyond)}; "
                f"choose among your scopes ({' '.join(principal.scopes) or 'none'}) or ask an admin"
            )
        owner = "" if p.machine else principal.user
        created = await self.ctx.registry.create_token(p.name or "orchestrator", scopes, p.expires_in, owner=owner)
        return Created(created.token, created.secret, SHOWN_ONCE)

    async def list_(self, p: ListTokens, principal: Principal) -> TokenList:
        # A person sees their own; a caller that is no person (a machine's admin token, the local admin) every token.
        owner = principal.user if principal.user and not p.everyone else None
        tokens = await self.ctx.registry.list_tokens(p.all, owner=owner)
        return TokenList(tokens, len(tokens))

    async def revoke(self, p: Revoke, principal: Principal) -> Revoked:
        owner = None if principal.sees_everything else principal.user
        return Revoked(await self.ctx.registry.revoke_token(p.token_id, owner=owner))


def _flag(name: str) -> Callable[[Mapping[str, Any]], bool]:
    return lambda args: bool(args.get(name))


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
            # Minting or revoking credentials is an administrator's act, whatever else a token may do; a person at the
            # console may still make, list and revoke their own (self_service).
            Action(
                "create",
                a.create,
                Create,
                admin=True,
                admin_if=_flag("machine"),
                admin_why=lambda _: "a machine's token acts for no person",
                self_service=True,
            ),
            Action(
                "list",
                a.list_,
                ListTokens,
                read_only=True,
                idempotent=True,
                admin_if=_flag("everyone"),
                admin_why=lambda _: "listing every person's tokens is an admin's",
                self_service=True,
            ),
            Action("revoke", a.revoke, Revoke, destructive=True, idempotent=True, admin=True, self_service=True),
        ],
    )
