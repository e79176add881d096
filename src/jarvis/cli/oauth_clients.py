"""`jarvis oauth-client add|list|delete`: MCP clients registered ahead by an admin (issue 31 item 2), for clients
that neither publish a metadata document nor register themselves. The same record dynamic registration makes.

`add --metadata-url` registers a client that names itself by its metadata document's URL (issue 48 item 3: Claude
Code, on a network that cannot reach claude.ai): the document is given here, checked as a fetched one is
(cimd.described_client), and Jarvis uses it without fetching."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from jarvis.aggregator.oauth.server.cimd import check_url, described_client
from jarvis.aggregator.oauth.server.clients import Clients, shown
from jarvis.aggregator.oauth.server.errors import OAuthError
from jarvis.cli.roles import run_with_store


@click.group("oauth-client")
def oauth_client() -> None:
    """MCP clients allowed to ask people to sign in, registered by an admin."""


@oauth_client.command("add")
@click.argument("name", required=False)
@click.option("--redirect-uri", "redirect_uris", multiple=True, help="Repeatable: where it listens.")
@click.option("--confidential", is_flag=True, help="Give it a client secret (shown once) to send to /oauth/token.")
@click.option(
    "--metadata-url",
    metavar="URL",
    help="A client whose client_id is this URL (a Client ID Metadata Document), registered with its metadata given "
    "here (--from-file, or --redirect-uri and --name): Jarvis uses it without fetching the URL.",
)
@click.option(
    "--from-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="With --metadata-url: the metadata document as JSON (its client_id must be the URL).",
)
@click.option("--name", "client_name", help="With --metadata-url and --redirect-uri: the client's name.")
@click.option(
    "--refetch",
    is_flag=True,
    help="With --metadata-url: fetch the document from the URL when it can be reached, this copy used only while "
    "the fetch fails. Default: never fetch it; the copy given here is used as it is.",
)
@click.pass_context
def oauth_client_add(
    ctx: click.Context,
    name: str | None,
    redirect_uris: tuple[str, ...],
    confidential: bool,
    metadata_url: str | None,
    from_file: Path | None,
    client_name: str | None,
    refetch: bool,
) -> None:
    """Register a client; prints its client_id (and secret, once).

    \b
    jarvis oauth-client add NAME --redirect-uri URI [--confidential]
    jarvis oauth-client add --metadata-url URL --from-file doc.json [--refetch]
    jarvis oauth-client add --metadata-url URL --redirect-uri URI [--name NAME] [--refetch]
    """
    if metadata_url is not None:
        document = _document(metadata_url, name, redirect_uris, confidential, from_file, client_name)
        _add_ahead(ctx, metadata_url, document, refetch)
        return
    if from_file is not None or client_name is not None or refetch:
        raise click.UsageError("--from-file, --name and --refetch go with --metadata-url")
    if not name or not redirect_uris:
        raise click.UsageError("give the client's NAME and at least one --redirect-uri (or --metadata-url)")
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


def _document(
    url: str,
    name: str | None,
    redirect_uris: tuple[str, ...],
    confidential: bool,
    from_file: Path | None,
    client_name: str | None,
) -> object:
    """The metadata document the options give: the file's, or one made of --redirect-uri and --name."""
    if name is not None:
        raise click.UsageError("with --metadata-url the client's name is --name NAME, not an argument")
    if confidential:
        raise click.UsageError("a client named by its metadata URL is public: it has no secret (no --confidential)")
    if from_file is None:
        if not redirect_uris:
            raise click.UsageError("with --metadata-url give --from-file doc.json, or at least one --redirect-uri")
        document: dict[str, Any] = {"client_id": url, "redirect_uris": list(redirect_uris)}
        return {**document, "client_name": client_name} if client_name is not None else document
    if redirect_uris or client_name is not None:
        raise click.UsageError("--from-file gives the whole document: drop --redirect-uri and --name")
    try:
        return json.loads(from_file.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise click.UsageError(f"{from_file} is not a readable JSON document: {exc}") from None


def _add_ahead(ctx: click.Context, url: str, document: object, refetch: bool) -> None:
    try:
        check_url(url)
        client = described_client(url, document)
    except OAuthError as exc:
        raise click.UsageError(exc.description) from None
    answer = run_with_store(ctx, lambda store: Clients(store).register_ahead(client, refetch))
    click.echo(json.dumps(answer, indent=2))


@oauth_client.command("list")
@click.pass_context
def oauth_client_list(ctx: click.Context) -> None:
    """Registered clients, as JSON (never their secrets), each with its source ("registered ahead": a metadata
    document an admin gave, with whether Jarvis may refetch it)."""
    stored = run_with_store(ctx, lambda store: store.list("client"))
    click.echo(json.dumps([shown(r.body) for r in stored], indent=2))


@oauth_client.command("delete")
@click.argument("client_id")
@click.pass_context
def oauth_client_delete(ctx: click.Context, client_id: str) -> None:
    """Delete a registered client (a metadata URL too): it can no longer start a sign-in or redeem a code."""
    if not run_with_store(ctx, lambda store: store.delete("client", client_id)):
        from jarvis.cli.banner import invocation  # the command as it runs here: `jarvis` may not be on PATH

        listing = f"{invocation(ctx.obj['data_dir'])} oauth-client list"
        raise click.ClickException(f"no client '{client_id}'; `{listing}` shows them")
    click.echo(f"deleted {client_id}")
