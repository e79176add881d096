"""`jarvis client list|edit|import|config`: the `jarvis_client` tool's actions for a person setting up their first
client, who has no MCP connection yet. The edit is the tool's own (surfaces/jarvis/client_edits.py), run as the
local admin against the registry of the data dir."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import click

from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.tooling.results import jsonable
from jarvis.cli.datadir import DataDirLock
from jarvis.cli.output import table
from jarvis.cli.registry import open_registry
from jarvis.cli.settings import settings_for
from jarvis.common.surfaces import ENTRY_NAMES_HELP

COLUMNS = (("name", "client"), ("detected", "detected"), ("entries", "entries"), ("config_path", "config file"))


def _served(ctx: click.Context) -> str:
    """The URL a `jarvis up` on this data dir serves ("" when none does)."""
    holder = DataDirLock(settings_for(ctx.obj["data_dir"]).resolved_data_dir).holder()
    return holder.url if holder is not None else ""


def _address(url: str) -> dict[str, Any]:
    """The host and port a served URL names, as settings: the registry opened here then writes entries for it."""
    if not url:
        return {}
    parts = urlsplit(url)
    return {"host": parts.hostname, "port": parts.port}


def _requires_token(url: str) -> bool:
    """Whether the `jarvis up` at `url` refuses a request without a token (it answers 401 before anything else)."""
    import urllib.error
    import urllib.request

    # The http URL our own lock file names, never one a caller gave.
    request = urllib.request.Request(url + "/mcp", data=b"{}", headers={"Content-Type": "application/json"})  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=3):  # noqa: S310
            return False
    except urllib.error.HTTPError as exc:
        return exc.code == 401
    except OSError:
        return False


def _serves_sign_in(url: str) -> bool:
    """Whether the `jarvis up` at `url` serves sign-in: its protected resource names an authorization server (Jarvis
    itself), where a client that follows the MCP authorization spec registers and its person signs in."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url + "/.well-known/oauth-protected-resource", timeout=3) as answer:  # noqa: S310
            return bool(json.loads(answer.read()).get("authorization_servers"))
    except (OSError, ValueError, AttributeError):  # 404 (open, or tokens only), unreachable, not a JSON object
        return False


@click.group()
def client() -> None:
    """MCP client applications: what they are configured with, and entries that connect them to Jarvis."""


@client.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_context
def client_list(ctx: click.Context, as_json: bool) -> None:
    """The known clients: whether each is installed here, its config file and its entries."""
    with open_registry(ctx, **_address(_served(ctx))) as registry:
        clients = registry.run(RegistryGateway.list_clients)
    if as_json:
        click.echo(json.dumps([jsonable(c) for c in clients], indent=2))
        return
    rows = [
        {
            "name": c.name,
            "detected": "yes" if c.detected else "no",
            "entries": [f"{e.name}{'' if e.managed else '*'}" for e in c.entries],
            "config_path": c.config_path + (f" ({c.error})" if c.error else ""),
        }
        for c in clients
    ]
    click.echo(table(rows, COLUMNS))
    click.echo("* not written by Jarvis", err=True)


@client.command("edit")
@click.argument("name")
@click.option("--add", "add", multiple=True, help=f"Repeatable: {ENTRY_NAMES_HELP}.")
@click.option("--remove", "remove", multiple=True, help="Repeatable: an entry Jarvis added, named as for --add.")
@click.option("--path", default=None, help="Another config file of the client's format, for this edit only.")
@click.option(
    "--token/--no-token",
    default=None,
    help=(
        "Give the new entries a token scoped to them [when the `jarvis up` on this data dir requires one, except for "
        "a client that signs in where that Jarvis serves sign-in]."
    ),
)
@click.pass_context
def client_edit_command(
    ctx: click.Context, name: str, add: tuple[str, ...], remove: tuple[str, ...], path: str | None, token: bool | None
) -> None:
    """Add entries that connect client NAME to Jarvis, or remove ones Jarvis added."""
    if not add and not remove:
        raise click.UsageError(f"give --add or --remove: {ENTRY_NAMES_HELP}")
    served = _served(ctx)
    tokens = token if token is not None else bool(served) and _requires_token(served)
    sign_in = token is None and tokens and _serves_sign_in(served)  # --token: a token whatever the client does
    # The tool's own edit; its package builds the whole `jarvis` surface, which only this command needs.
    from jarvis.aggregator.surfaces.jarvis.client_edits import client_edit, write_client_edit
    from jarvis.aggregator.tooling.principal import LOCAL_ADMIN

    edit, added = client_edit(name, list(add), list(remove), path)
    with open_registry(ctx, **_address(served)) as registry:
        registry.run(RegistryGateway.bootstrap)  # what `jarvis up` does first: the default servers and profile
        done = registry.run(write_client_edit, edit, added, LOCAL_ADMIN, tokens_required=tokens, sign_in=sign_in)
    where = done.client.config_path if done.client is not None else name
    for entry in done.added:
        click.echo(f"added {entry} to {where}")
    for entry in done.removed:
        click.echo(f"removed {entry} from {where}")
    if done.backup_path:
        click.echo(f"backup: {done.backup_path}", err=True)
    for note in done.notes:
        click.echo(f"note: {note}", err=True)


@client.command("import")
@click.argument("name")
@click.pass_context
def client_import(ctx: click.Context, name: str) -> None:
    """Install the servers of client NAME's own entries as Jarvis servers."""
    with open_registry(ctx) as registry:
        done = registry.run(RegistryGateway.import_client, name)
    click.echo(f"imported {', '.join(done.imported) or 'nothing'}")
    for reason in done.skipped:
        click.echo(f"  skipped {reason}", err=True)


@client.command("config")
@click.argument("name")
@click.option("--path", default=None, help='Use this config file from now on ("" goes back to the default).')
@click.pass_context
def client_config(ctx: click.Context, name: str, path: str | None) -> None:
    """Show client NAME's config file, or set another one."""
    with open_registry(ctx) as registry:
        info = registry.run(RegistryGateway.client_config_path, name, path)
    state = ("custom" if info.custom else "default") + ("" if info.exists else ", not there yet")
    click.echo(f"{info.name}: {info.path} ({state})")
