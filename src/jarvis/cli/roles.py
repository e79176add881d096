"""`jarvis role set|list|delete`: which identity-provider groups (and single users) get which Jarvis scopes when
they sign in; `jarvis user list|disable|enable`: the people who signed in (issue 31 items 2 and 3). Both live in the
registry, shared by every replica; a change applies from the next token a person's client gets (at most the access
token's lifetime later)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import click

from jarvis.aggregator.gateways.oauth_state import OAuthStateGateway
from jarvis.aggregator.oauth.server.people import make_role, role_from
from jarvis.cli.downstream_grants import forget_downstream_grants
from jarvis.cli.registry import open_registry
from jarvis.common.errors import InvalidArgument

T = TypeVar("T")


def run_with_store(ctx: click.Context, work: Callable[[OAuthStateGateway], Awaitable[T]]) -> T:
    """`work` on the sign-in records of the registry the command reaches (a running one, or the data dir's)."""
    with open_registry(ctx) as registry:

        async def run() -> T:
            store = OAuthStateGateway(registry.target, registry.plane)
            try:
                return await work(store)
            finally:
                await store.close()

        return asyncio.run(run())


@click.group()
def role() -> None:
    """Roles: identity-provider groups and users mapped to Jarvis scopes, for people who sign in."""


@role.command("set")
@click.argument("name")
@click.option("--group", "groups", multiple=True, help="Repeatable: a group as the identity provider names it.")
@click.option("--user", "users", multiple=True, help="Repeatable: one person, by subject or email.")
@click.option("--scope", "scopes", multiple=True, required=True, help="Repeatable: a Jarvis scope (jarvis, read…).")
@click.pass_context
def role_set(
    ctx: click.Context, name: str, groups: tuple[str, ...], users: tuple[str, ...], scopes: tuple[str, ...]
) -> None:
    """Create or replace a role."""
    try:
        made = make_role(name, groups, users, scopes)
    except (ValueError, InvalidArgument) as exc:
        raise click.UsageError(str(exc)) from None
    run_with_store(ctx, lambda store: store.put("role", made.name, made.record()))
    click.echo(f"role {made.name}: {', '.join(made.groups + made.users)} -> {', '.join(made.scopes)}")


@role.command("list")
@click.pass_context
def role_list(ctx: click.Context) -> None:
    """The roles, as JSON."""
    stored = run_with_store(ctx, lambda store: store.list("role"))
    click.echo(json.dumps([{"name": r.key, **role_from(r.key, r.body).record()} for r in stored], indent=2))


@role.command("delete")
@click.argument("name")
@click.pass_context
def role_delete(ctx: click.Context, name: str) -> None:
    """Delete a role; its people keep no scope from it from their next token on."""
    if not run_with_store(ctx, lambda store: store.delete("role", name)):
        raise click.ClickException(f"no role '{name}'; `jarvis role list` shows the roles")
    click.echo(f"deleted role {name}")


@click.group()
def user() -> None:
    """People who signed in through the team's identity provider (recorded at their first sign-in)."""


@user.command("list")
@click.pass_context
def user_list(ctx: click.Context) -> None:
    """The users, as JSON: subject, email, name, groups, first and last sign-in, disabled."""
    stored = run_with_store(ctx, lambda store: store.list("user"))
    click.echo(json.dumps([r.body for r in stored], indent=2))


async def _set_disabled(store: OAuthStateGateway, who: str, disabled: bool) -> dict[str, object] | None:
    """Disabling stamps `not_before` (tokens issued before it stay refused after an enable) and revokes the person's
    refresh tokens; every replica refuses their access tokens and ends their sessions within its standing cache's
    life (oauth/standing.py, decision 0057)."""
    for record in await store.list("user"):
        if who in (record.key, record.body.get("email")):
            body = {**record.body, "disabled": disabled}
            if disabled:
                body["not_before"] = int(time.time()) + 1  # a token issued in this very second is before it too
            await store.put("user", record.key, body)
            if disabled:
                for grant in await store.list("refresh"):
                    if grant.body.get("user", {}).get("subject") == record.key:
                        await store.revoke_family(grant.family)
            return body
    return None


@user.command("disable")
@click.argument("who")
@click.pass_context
def user_disable(ctx: click.Context, who: str) -> None:
    """Disable a user (by subject or email): no sign-in, no new or refreshed token, their refresh tokens revoked;
    their access tokens and agent credentials are refused and their MCP sessions end within seconds (every replica's
    JARVIS_AGGREGATOR_TOKEN_CACHE_SECONDS, 5 s)."""
    body = run_with_store(ctx, lambda store: _set_disabled(store, who, True))
    if body is None:
        raise click.ClickException(f"no user '{who}'; `jarvis user list` shows who has signed in")
    forget_downstream_grants(ctx, f"user:{body.get('subject') or who}")  # their downstream tokens and keys (issue 32)
    click.echo(f"disabled {who}")


@user.command("enable")
@click.argument("who")
@click.pass_context
def user_enable(ctx: click.Context, who: str) -> None:
    """Enable a disabled user again (by subject or email)."""
    if run_with_store(ctx, lambda store: _set_disabled(store, who, False)) is None:
        raise click.ClickException(f"no user '{who}'; `jarvis user list` shows who has signed in")
    click.echo(f"enabled {who}")
