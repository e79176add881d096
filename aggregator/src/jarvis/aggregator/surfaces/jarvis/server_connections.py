"""`jarvis_server action=connect|disconnect` and the caller's connection and keys in `info` (issue 32): a person's own
authorization at a server listed in `servers.oauth`. Nothing here ever carries a token."""

from __future__ import annotations

from dataclasses import dataclass

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.downstream.auth.consent import NeedsConsent
from jarvis.aggregator.downstream.auth.person import person_of
from jarvis.aggregator.downstream.hosting.personal import CONNECTED
from jarvis.aggregator.tooling.principal import Principal
from jarvis.common.errors import FailedPrecondition, InvalidArgument
from jarvis.common.params import Named


@dataclass(frozen=True)
class YourConnection:
    """The caller's own authorization at a server people use with their own accounts."""

    state: str  # connected, expired (renewed on the next call), needs consent
    expires_at: int | None = None  # unix seconds the current access token expires at


@dataclass(frozen=True)
class Connect:
    server: str
    state: str  # connected, expired, needs consent; keys: ready, needs keys
    link: str | None = None  # open it in your browser and approve; it works once, for you
    next: str | None = None
    set: list[str] | None = None  # keys: the names you have values for (the values are never shown)
    needed: list[str] | None = None  # keys: the names the server takes from each person


@dataclass(frozen=True)
class YourKeys:
    """The caller's own values at a server whose env variables or headers are per person (names only)."""

    needed: list[str]
    set: list[str]


@dataclass(frozen=True)
class Disconnected:
    server: str
    forgotten: bool  # whether Jarvis held an authorization of yours there


def _personal(ctx: ToolContext, server: str) -> None:
    if ctx.downstream is None or not ctx.downstream.personal.serves(server):
        raise FailedPrecondition(
            f"server '{server}' is not used with each person's own account (it is not in servers.oauth, or not "
            "a streamable-HTTP server): its credentials are the team's, set on the server"
        )


async def your_connection(ctx: ToolContext, server: str, principal: Principal) -> YourConnection | None:
    if ctx.downstream is None or not ctx.downstream.personal.serves(server) or not person_of(principal):
        return None
    for connection in await ctx.downstream.personal.connections(person_of(principal)):
        if connection.server == server:
            return YourConnection(connection.state, connection.expires_at or None)
    return None


async def your_keys(ctx: ToolContext, server: str, principal: Principal) -> YourKeys | None:
    keyed = ctx.downstream.personal.keyed if ctx.downstream is not None else None
    if keyed is None or not keyed.serves(server):
        return None
    values = await keyed.values(server, person_of(principal)) if person_of(principal) else {}
    return YourKeys(list(keyed.plans[server][1]), sorted(values))


async def set_keys(ctx: ToolContext, server: str, env: dict[str, str | None], principal: Principal) -> Connect:
    keyed = ctx.downstream.personal.keyed if ctx.downstream is not None else None
    if keyed is None or not keyed.serves(server):
        raise FailedPrecondition(
            f"server '{server}' takes no per-person keys (it is not in servers.per_person): its credentials are "
            "the team's, set on the server"
        )
    if not env:
        raise InvalidArgument(
            'jarvis_server action=connect with env needs {"NAME": "your value"} (null removes yours); the names: '
            + ", ".join(keyed.plans[server][1])
        )
    names: list[str] = []
    for key, value in env.items():
        names = await keyed.set_value(server, person_of(principal), key, value)
    needed = list(keyed.plans[server][1])
    return Connect(server, "ready" if set(needed) <= set(names) else "needs keys", set=names, needed=needed)


async def connect(ctx: ToolContext, p: Named, principal: Principal) -> Connect:
    _personal(ctx, p.name)
    assert ctx.downstream is not None
    mine = await your_connection(ctx, p.name, principal)
    if mine is not None and mine.state == CONNECTED:
        return Connect(p.name, CONNECTED, next="already connected; `action=disconnect` forgets it")
    needed: NeedsConsent = await ctx.downstream.personal.consent(p.name, person_of(principal))
    return Connect(
        p.name,
        mine.state if mine is not None else "needs consent",
        needed.link,
        "open the link in your browser and approve with your own account; your calls to the server then run as you",
    )


async def disconnect(ctx: ToolContext, p: Named, principal: Principal) -> Disconnected:
    """Forget the caller's grant at a servers.oauth server, or all their keys of a servers.per_person one."""
    keyed = ctx.downstream.personal.keyed if ctx.downstream is not None else None
    if keyed is not None and keyed.serves(p.name):
        return Disconnected(p.name, await keyed.forget(p.name, person_of(principal)))
    _personal(ctx, p.name)
    assert ctx.downstream is not None
    return Disconnected(p.name, await ctx.downstream.personal.disconnect(p.name, person_of(principal)))
