"""`jarvis role set|list|delete`: which identity-provider groups (and single users) get which Jarvis scopes when
they sign in; `jarvis user list|disable|enable`: the people who signed in (issue 31 items 2 and 3). Both live in the
registry, shared by every replica; a change applies from the next token a person's client gets (at most the access
token's lifetime later)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import TypeVar

import click

from jarvis.aggregator.gateways.oauth_state import OAuthStateGateway
from jarvis.aggregator.gateways.vault import VaultGateway
from jarvis.aggregator.oauth.server.admin import PeopleAdmin
from jarvis.cli.registry import open_registry
from jarvis.common.errors import InvalidArgument, NotFound

T = TypeVar("T")


def run_with_store(ctx: click.Context, work: Callable[[OAuthStateGateway], Awaitable[T]]) -> T:
    """`work` on the sign-in records of the registry the command reaches (a running one, or the data dir's)."""
    return run_as_admin(ctx, lambda admin: work(admin.store))


def run_as_admin(ctx: click.Context, work: Callable[[PeopleAdmin], Awaitable[T]]) -> T:
    """`work` on the people and roles of the registry the command reaches; its refusals as click's errors."""
    with open_registry(ctx) as registry:

        async def run() -> T:
            store = OAuthStateGateway(registry.target, registry.plane)
            vault = VaultGateway(registry.target, registry.plane)
            try:
                return await work(PeopleAdmin(store, vault))
            finally:
                await store.close()
                await vault.close()

        try:
            return asyncio.run(run())
        except InvalidArgument as exc:
            raise click.UsageError(str(exc)) from None
        except NotFound as exc:
            raise click.ClickException(str(exc)) from None


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
    made = run_as_admin(ctx, lambda admin: admin.set_role(name, groups, users, scopes))
    click.echo(f"role {made.name}: {', '.join(made.groups + made.users)} -> {', '.join(made.scopes)}")


@role.command("list")
@click.pass_context
def role_list(ctx: click.Context) -> None:
    """The roles, as JSON."""
    roles = run_as_admin(ctx, lambda admin: admin.roles())
    click.echo(json.dumps([{"name": r.name, **r.record()} for r in roles], indent=2))


@role.command("delete")
@click.argument("name")
@click.pass_context
def role_delete(ctx: click.Context, name: str) -> None:
    """Delete a role; its people keep no scope from it from their next token on."""
    run_as_admin(ctx, lambda admin: admin.delete_role(name))
    click.echo(f"deleted role {name}")


@click.group()
def user() -> None:
    """People who signed in through the team's identity provider (recorded at their first sign-in)."""


@user.command("list")
@click.pass_context
def user_list(ctx: click.Context) -> None:
    """The users, as JSON: subject, email, name, groups, first and last sign-in, disabled."""
    click.echo(json.dumps(run_as_admin(ctx, lambda admin: admin.users()), indent=2))


@user.command("disable")
@click.argument("who")
@click.pass_context
def user_disable(ctx: click.Context, who: str) -> None:
    """Disable a user (by subject or email): no sign-in, no new or refreshed token, their refresh tokens revoked and
    their downstream grants and keys forgotten; their access tokens and agent credentials are refused and their MCP
    sessions end within seconds (every replica's JARVIS_AGGREGATOR_TOKEN_CACHE_SECONDS, 5 s)."""
    run_as_admin(ctx, lambda admin: admin.set_disabled(who, True))
    click.echo(f"disabled {who}")


@user.command("enable")
@click.argument("who")
@click.pass_context
def user_enable(ctx: click.Context, who: str) -> None:
    """Enable a disabled user again (by subject or email)."""
    run_as_admin(ctx, lambda admin: admin.set_disabled(who, False))
    click.echo(f"enabled {who}")
