"""`jarvis oauth-client add|list|delete`: MCP clients registered ahead by an admin (issue 31 item 2), for clients
that neither publish a metadata document nor register themselves. The same record dynamic registration makes."""

from __future__ import annotations

import json

import click

from jarvis.aggregator.oauth.server.clients import Clients, client_from
from jarvis.aggregator.oauth.server.errors import OAuthError
from jarvis.cli.roles import run_with_store


@click.group("oauth-client")
def oauth_client() -> None:
    """MCP clients allowed to ask people to sign in, registered by an admin."""


@oauth_client.command("add")
@click.argument("name")
@click.option("--redirect-uri", "redirect_uris", multiple=True, required=True, help="Repeatable: where it listens.")
@click.option("--confidential", is_flag=True, help="Give it a client secret (shown once) to send to /oauth/token.")
@click.pass_context
def oauth_client_add(ctx: click.Context, name: str, redirect_uris: tuple[str, ...], confidential: bool) -> None:
    """Register a client; prints its client_id (and secret, once)."""
    body = {
        "client_name": name,
        "redirect_uris": list(redirect_uris),
        "token_endpoint_auth_method": "client_secret_basic" if confidential else "none",
    }
    try:
        answer = run_with_store(ctx, lambda store: Clients(store).register(body))
    except OAuthError as exc:
        raise click.UsageError(exc.description) from None
    click.echo(json.dumps(answer, indent=2))


@oauth_client.command("list")
@click.pass_context
def oauth_client_list(ctx: click.Context) -> None:
    """Registered clients, as JSON (never their secrets)."""
    stored = run_with_store(ctx, lambda store: store.list("client"))
    shown = [{k: v for k, v in client_from(r.body).record().items() if k != "secret_hash"} for r in stored]
    click.echo(json.dumps(shown, indent=2))


@oauth_client.command("delete")
@click.argument("client_id")
@click.pass_context
def oauth_client_delete(ctx: click.Context, client_id: str) -> None:
    """Delete a registered client: it can no longer start a sign-in or redeem a code."""
    if not run_with_store(ctx, lambda store: store.delete("client", client_id)):
        raise click.ClickException(f"no client '{client_id}'; `jarvis oauth-client list` shows them")
    click.echo(f"deleted {client_id}")
