"""The `jarvis` command line: start Jarvis, serve one service, and administer the registry.

Fast to start (issue 46 item 2): this module imports click and little else. Each command imports what it uses when it
runs, and the commands of the other modules are imported only when one of them runs (LAZY, jarvis/cli/lazy.py), so
`jarvis --help` or `jarvis token list` never load the services, the MCP SDK or a model they do not use.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from jarvis.aggregator.surfaces.paths import PROFILE_PATH_PREFIX, SURFACE_PATHS
from jarvis.cli.lazy import LazyCommand, LazyGroup

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

    from jarvis.aggregator.gateways.registry import RegistryGateway
    from jarvis.aggregator.views.registry import ToolPinView
    from jarvis.cli.datadir import DataDirLock, Holder

# The commands of other modules, imported when one runs; their summaries are what `jarvis --help` lists
# (tests/unit/common/test_cli_lazy.py checks them against each command's own help).
LAZY = {
    "client": LazyCommand(
        "jarvis.cli.client",
        "client",
        "MCP client applications: what they are configured with, and entries that connect them to Jarvis.",
    ),
    "image": LazyCommand("jarvis.cli.image", "image", "Images of project containers."),
    "migrate": LazyCommand(
        "jarvis.cli.migrate",
        "migrate",
        "Upgrade the registry's, runtime's and scheduler's schemas (DATABASE_URL) to their newest revisions.",
    ),
    "oauth-client": LazyCommand(
        "jarvis.cli.oauth_clients",
        "oauth_client",
        "MCP clients allowed to ask people to sign in, registered by an admin.",
    ),
    "oauth-keys": LazyCommand(
        "jarvis.cli.oauth_keys",
        "oauth_keys",
        "Signing keys of sign-in access tokens (rotate, then prune once the old key's tokens have expired).",
    ),
    "probe": LazyCommand(
        "jarvis.cli.probe", "probe", "Check that a local service answers healthy (for container healthchecks)."
    ),
    "role": LazyCommand(
        "jarvis.cli.roles",
        "role",
        "Roles: identity-provider groups and users mapped to Jarvis scopes, for people who sign in.",
    ),
    "user": LazyCommand(
        "jarvis.cli.roles",
        "user",
        "People who signed in through the team's identity provider (recorded at their first sign-in).",
    ),
}

SURFACES = tuple(SURFACE_PATHS)
PROFILE_SURFACE = "profile/"
WORKERS_HELP = (
    "Aggregator processes sharing the port [1]; 0: one per core. More than one serves stateless HTTP and "
    "needs JARVIS_REDIS_URL (a session's loaded tools live there)."
)
TOKEN_COLUMNS = (
    ("id", "id"),
    ("name", "name"),
    ("prefix", "prefix"),
    ("scopes", "scopes"),
    ("owner", "acts for"),
    ("created_at", "created"),
    ("expires_at", "expires"),
    ("last_used_at", "last used"),
    ("revoked_at", "revoked"),
)


class SurfaceType(click.ParamType[str]):
    """A built-in surface, or `profile/<name>` for a profile's downstream tools."""

    name = "surface"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        name = text.removeprefix(PROFILE_SURFACE)
        if text not in SURFACES and (name == text or not name or "/" in name):
            self.fail(
                f"{text!r} is not a surface; use one of {', '.join(SURFACES)}, or profile/<name> "
                "(a profile's servers' tools)",
                param,
                ctx,
            )
        return text

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
        from click.shell_completion import CompletionItem

        return [CompletionItem(s) for s in (*SURFACES, PROFILE_SURFACE) if s.startswith(incomplete)]


@click.group(cls=LazyGroup, lazy=LAZY)
@click.option("--data-dir", envvar="JARVIS_DATA_DIR", help="Where embedded Jarvis keeps its data [~/.jarvis].")
@click.option(
    "--registry",
    "registry_target",
    envvar="JARVIS_REGISTRY_TARGET",
    help="host:port of a running registry service; default: open the data dir directly.",
)
@click.pass_context
def cli(ctx: click.Context, data_dir: str | None, registry_target: str | None) -> None:
    """Jarvis: one MCP endpoint for a whole team's agents."""
    ctx.obj = {"data_dir": data_dir, "registry": registry_target}


@cli.command()
@click.option("--host", default=None, help="Address to listen on [127.0.0.1]. Beyond loopback, tokens are required.")
@click.option("--port", type=int, default=None, help="Port to listen on [8765].")
@click.option("--stateless", is_flag=True, default=None, help="Stateless streamable HTTP (for replicas).")
@click.option("--require-auth/--no-require-auth", default=None, help="Require a token even on loopback.")
@click.option("--workers", type=click.IntRange(min=0), default=None, help=WORKERS_HELP)
@click.pass_context
def up(
    ctx: click.Context,
    host: str | None,
    port: int | None,
    stateless: bool | None,
    require_auth: bool | None,
    workers: int | None,
) -> None:
    """Start Jarvis embedded: every service in one process, SQLite under the data dir."""
    from jarvis.cli.banner import banner as banner_lines
    from jarvis.cli.banner import invocation
    from jarvis.cli.datadir import DataDirLock
    from jarvis.cli.runner import run_embedded
    from jarvis.cli.settings import settings_for
    from jarvis.common.errors import JarvisError
    from jarvis.common.logging import configure_logging

    settings = settings_for(
        ctx.obj["data_dir"], host=host, port=port, stateless=stateless, require_auth=require_auth, workers=workers
    )
    configure_logging(settings.log_level, settings.log_json)
    from jarvis.cli.ports import taken

    if (busy := taken(settings.host, settings.port)) is not None:  # before anything starts
        raise click.ClickException(busy)
    lock = DataDirLock(settings.resolved_data_dir)
    holder = lock.acquire("jarvis up")
    if holder is not None:
        raise click.ClickException(
            f"the data dir {settings.resolved_data_dir} is in use by {holder.describe()}; a second Jarvis on it would "
            "take over its containers and sessions. Stop that one first, connect to it, or give this one another "
            "--data-dir"
        )

    def banner(aggregator: Any) -> None:
        base = f"http://{_display_host(settings.host)}:{settings.port}"
        lock.publish(base)  # the services it published as they started stay named: admin commands ask them
        surfaces = [(s.name, s.path) for s in aggregator.surfaces]
        served = aggregator.settings
        command = invocation(ctx.obj["data_dir"])
        data_dir = str(settings.resolved_data_dir)
        lines = banner_lines(data_dir, base, surfaces, served.auth_required, served.oidc_issuer, command)
        if served.auth_required:  # entries written while this Jarvis ran open: say which to write again, and how
            from jarvis.cli.client_refresh import client_refreshes, refresh_line

            hint = refresh_line(client_refreshes(settings, bool(served.oidc_issuer)), command)
            lines[-1:-1] = [hint] if hint else []
        click.echo("\n".join(lines), err=False)
        sys.stdout.flush()

    try:
        run_embedded(
            settings, banner, before_restart=lock.release, services_up=lambda targets: lock.publish("", targets)
        )
    except JarvisError as exc:  # a setting to fix (workers without Redis): no traceback
        raise click.ClickException(str(exc)) from None
    finally:
        lock.release()


def _display_host(host: str) -> str:
    return "127.0.0.1" if host in ("0.0.0.0", "") else (f"[{host}]" if ":" in host else host)  # noqa: S104


@cli.command()
@click.argument(
    "service",
    type=click.Choice(
        ["registry", "aggregator", "debug", "runtime", "scheduler", "scheduler-worker", "scheduler-beat"]
    ),
)
@click.option("--workers", type=click.IntRange(min=0), default=None, help=f"aggregator only: {WORKERS_HELP}")
def serve(service: str, workers: int | None) -> None:
    """Serve one service (for containers); configured by environment variables."""
    if workers is not None and service != "aggregator":
        raise click.UsageError("--workers applies to the aggregator only")
    from pydantic import ValidationError

    from jarvis.common.errors import JarvisError

    try:
        _serve(service, workers)
    except ValidationError as exc:  # a bad setting: say which one, without a traceback or the value given
        from jarvis.common.settings import describe_invalid_settings

        raise click.ClickException(describe_invalid_settings(exc)) from None
    except JarvisError as exc:  # a setting to fix (a missing credential, an unreadable file): no traceback
        raise click.ClickException(str(exc)) from None


def _serve(service: str, workers: int | None = None) -> None:
    import importlib

    if service in ("registry", "debug", "runtime", "scheduler"):
        # Imported here, one service's modules only: what `python -m jarvis.<service>` runs.
        importlib.import_module(f"jarvis.{service}.__main__").main()
        return
    if service in ("scheduler-worker", "scheduler-beat"):
        from jarvis.scheduler.processes import run_beat, run_worker

        (run_worker if service == "scheduler-worker" else run_beat)()
        return
    from jarvis.aggregator.settings import AggregatorSettings
    from jarvis.cli.runner import run_distributed
    from jarvis.common.logging import configure_logging

    settings = AggregatorSettings() if workers is None else AggregatorSettings(workers=workers)
    configure_logging(settings.log_level, settings.log_json)
    run_distributed(settings)


@cli.command()
@click.option(
    "--surface",
    default="jarvis",
    type=SurfaceType(),
    show_default=True,
    help=f"{', '.join(SURFACES)}, or profile/<name>.",
)
@click.option(
    "--url",
    default="",
    help="Relay to the surface at this URL of a Jarvis elsewhere (e.g. https://jarvis.example/mcp/jarvis), with "
    "JARVIS_TOKEN as its bearer: for a client that only spawns servers, such as Claude Desktop.",
)
@click.pass_context
def mcp(ctx: click.Context, surface: str, url: str) -> None:
    """Serve one surface over stdio (for clients that spawn their servers).

    When a `jarvis up` serves the same data dir, relay to it over HTTP instead of starting a second Jarvis
    (give its token in JARVIS_TOKEN if it requires one); with --url, relay to that Jarvis, wherever it runs.
    """
    if url:
        _relay_to(ctx, url)
        return
    from jarvis.cli.datadir import DataDirLock
    from jarvis.cli.settings import settings_for
    from jarvis.common.logging import configure_logging

    settings = settings_for(ctx.obj["data_dir"])
    configure_logging(settings.log_level, True)  # stderr only: stdout carries the protocol
    lock = DataDirLock(settings.resolved_data_dir)
    holder = lock.acquire("jarvis mcp")
    if holder is None:
        from jarvis.cli.runner import run_stdio

        try:
            run_stdio(surface, settings, ctx.obj["registry"])
        finally:
            lock.release()
        return
    url = _serving_url(lock, holder)
    if not url:
        raise click.ClickException(
            f"the data dir {settings.resolved_data_dir} is in use by {holder.describe()}, which serves no HTTP to "
            "relay to; run `jarvis up` on it instead (every client can then connect, over HTTP or through "
            "`jarvis mcp`), or give this one another --data-dir"
        )
    import anyio

    from jarvis.cli.banner import invocation
    from jarvis.cli.bridge import bridge_stdio

    path = SURFACE_PATHS.get(surface) or PROFILE_PATH_PREFIX + surface.removeprefix(PROFILE_SURFACE)
    anyio.run(bridge_stdio, url + path, os.environ.get("JARVIS_TOKEN", ""), invocation(ctx.obj["data_dir"]))


def _relay_to(ctx: click.Context, url: str) -> None:
    """`jarvis mcp --url`: stdio to the surface at `url`, no data dir of its own (the Jarvis there has one)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise click.BadParameter(f"{url!r} is no http(s) URL; give a surface's, e.g. https://jarvis.example/mcp/jarvis")
    import anyio

    from jarvis.cli.banner import invocation
    from jarvis.cli.bridge import bridge_stdio

    anyio.run(bridge_stdio, url, os.environ.get("JARVIS_TOKEN", ""), invocation(ctx.obj["data_dir"]))


def _serving_url(lock: DataDirLock, holder: Holder, wait: float = 30.0) -> str:
    """The URL a `jarvis up` holding the data dir serves; one still starting gets `wait` seconds to listen."""
    deadline = time.monotonic() + wait
    while not holder.url and holder.command == "jarvis up" and time.monotonic() < deadline:
        time.sleep(0.2)
        holder = lock.holder() or holder
    return holder.url


def _echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, default=str))


@cli.group()
def catalog() -> None:
    """The catalog of installable MCP servers."""


@catalog.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["", "server.json", "livemcpbench"]),
    default="",
    help="Force a format instead of detecting it.",
)
@click.pass_context
def catalog_import(ctx: click.Context, file: Path, fmt: str) -> None:
    """Import servers from an MCP registry server.json or a LiveMCPBench tools.json file."""
    from jarvis.aggregator.gateways.registry import RegistryGateway
    from jarvis.cli.output import BATCH, catalog_batches
    from jarvis.cli.registry import open_registry

    content = file.read_bytes()
    click.echo(f"reading {file} ({len(content):,} bytes)", err=True)
    batches = catalog_batches(content)
    imported = updated = 0
    skipped: list[str] = []
    with open_registry(ctx) as registry:
        if batches is None:
            click.echo("importing into the registry…", err=True)
            resp = registry.run(RegistryGateway.import_catalog, content, file.name, fmt)
            imported, updated, skipped, fmt = resp.imported, resp.updated, resp.skipped, resp.format
        else:
            parts, total = batches
            with click.progressbar(
                length=total, label=f"importing {total:,} servers", file=sys.stderr, show_pos=True
            ) as bar:
                for n, part in enumerate(parts):
                    # The first part detects the format; the rest are read as that format.
                    resp = registry.run(RegistryGateway.import_catalog, part, file.name, fmt)
                    fmt = resp.format
                    imported, updated = imported + resp.imported, updated + resp.updated
                    skipped += resp.skipped
                    bar.update(min(BATCH, total - n * BATCH))
        registry.run(RegistryGateway.bootstrap)
    click.echo(f"imported {imported} new and updated {updated} entries ({fmt})")
    for reason in skipped:
        click.echo(f"  skipped {reason}", err=True)


@cli.group()
def token() -> None:
    """Access tokens for the aggregator (the secret is shown once)."""


@token.command("create")
@click.option("--name", required=True, help="What the token is for, e.g. ci-bot.")
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    required=True,
    help="Repeatable: admin, read, jarvis, jarvis:jarvis_server, jarvis:jarvis_server:list…",
)
@click.option("--expires-in", type=int, default=0, help="Seconds until it expires (0: never).")
@click.pass_context
def token_create(ctx: click.Context, name: str, scopes: tuple[str, ...], expires_in: int) -> None:
    """Create a token and print its secret once."""
    from jarvis.aggregator.gateways.registry import RegistryGateway
    from jarvis.cli.registry import open_registry

    with open_registry(ctx) as registry:
        resp = registry.run(RegistryGateway.create_token, name, list(scopes), expires_in)
    click.echo(resp.secret)
    click.echo(
        f"token {resp.token.id} ({', '.join(resp.token.scopes)}): store the secret now; Jarvis keeps only its hash",
        err=True,
    )


@token.command("list")
@click.option("--all", "include_revoked", is_flag=True, help="Include revoked tokens.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_context
def token_list(ctx: click.Context, include_revoked: bool, as_json: bool) -> None:
    """List tokens (never their secrets)."""
    from jarvis.aggregator.gateways.registry import RegistryGateway
    from jarvis.aggregator.tooling.results import jsonable
    from jarvis.cli.output import table
    from jarvis.cli.registry import open_registry

    with open_registry(ctx) as registry:
        listed = registry.run(RegistryGateway.list_tokens, include_revoked)
    tokens = [jsonable(t) for t in listed]
    if as_json:
        _echo_json(tokens)
    elif not tokens:
        from jarvis.cli.banner import invocation  # the command as it runs here: `jarvis` may not be on PATH

        click.echo(
            f"no tokens; create one with: {invocation(ctx.obj['data_dir'])} token create --name NAME --scope SCOPE",
            err=True,
        )
    else:
        click.echo(table(tokens, TOKEN_COLUMNS))


@token.command("revoke")
@click.argument("token_id")
@click.pass_context
def token_revoke(ctx: click.Context, token_id: str) -> None:
    """Revoke a token by id; aggregators stop accepting it within their cache bound (5 s)."""
    from jarvis.aggregator.gateways.registry import RegistryGateway
    from jarvis.cli.registry import open_registry

    with open_registry(ctx) as registry:
        revoked = registry.run(RegistryGateway.revoke_token, token_id)
    click.echo(f"revoked {revoked.id} ({revoked.name})")


@cli.group()
def audit() -> None:
    """The audit log: every tool call with who, surface, tool, action, target, outcome and duration."""


@audit.command("export")
@click.option(
    "--since",
    type=click.DateTime(["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S%z"]),
    help="Only entries from this time on (UTC unless it says otherwise); default: all that are kept.",
)
@click.option("--tool", default="", help="Only calls of this tool.")
@click.option(
    "--token",
    default="",
    help="Only calls made with this token (its id or name), or by this person (email, user:<sub>).",
)
@click.pass_context
def audit_export(ctx: click.Context, since: datetime | None, tool: str, token: str) -> None:
    """Print the audit log as JSON lines, newest first (retention: the `audit.retention_days` setting)."""
    from jarvis.aggregator.gateways.registry import RegistryGateway
    from jarvis.aggregator.tooling.results import jsonable
    from jarvis.cli.registry import open_registry

    page = 1000
    with open_registry(ctx) as registry:
        before = 0
        while True:
            entries = registry.run(RegistryGateway.audit, tool, token, page, before_id=before, since=since)
            for entry in entries:
                click.echo(json.dumps(jsonable(entry), separators=(",", ":"), ensure_ascii=False))
            if len(entries) < page:
                return
            before = entries[-1].id


@cli.group()
def server() -> None:
    """Hosted MCP servers: review and approve changed tool definitions."""


@server.command("approve")
@click.argument("name")
@click.option("--tool", "tools", multiple=True, help="Repeatable; default: every quarantined tool of NAME.")
@click.pass_context
def server_approve(ctx: click.Context, name: str, tools: tuple[str, ...]) -> None:
    """Accept the changed definitions of NAME's quarantined tools; aggregators serve them again."""
    from jarvis.cli.registry import open_registry

    with open_registry(ctx) as registry:

        async def approve(r: RegistryGateway) -> tuple[list[ToolPinView], list[ToolPinView]]:
            return await r.list_tool_pins(name), await r.approve_tool_pins(name, list(tools))

        pins_before, pins_after = registry.run(approve)
    before = {p.tool: p.state for p in pins_before}
    approved = [p.tool for p in pins_after if before.get(p.tool) == "quarantined" and p.state == "pinned"]
    click.echo(
        f"approved {', '.join(approved)}"
        if approved
        else f"nothing to approve: no tool of {name} is quarantined" + (f" among {', '.join(tools)}" if tools else "")
    )


@cli.command()
@click.pass_context
def status(ctx: click.Context) -> None:
    """Doctor report of the registry (config, database, migrations, catalog) and, beside a running `jarvis up`, the
    health of its services and the daemons they need (Docker, Redis, Celery), as `jarvis_check_status` reports them."""
    from jarvis.cli.registry import open_registry, serving_services
    from jarvis.cli.settings import settings_for
    from jarvis.cli.status import report

    settings = settings_for(ctx.obj["data_dir"])
    served = {} if ctx.obj["registry"] else serving_services(settings.resolved_data_dir)
    redis_url = settings.aggregator_settings("").redis_url if served else ""
    with open_registry(ctx) as registry:
        found = registry.run(report, served, registry.plane, redis_url)
    click.echo("\n".join(found.lines(settings.resolved_data_dir)))
    sys.exit(0 if found.healthy else 1)


@cli.group()
def scaffold() -> None:
    """Write templates into a project."""


@scaffold.command("project-server")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite files the template would replace.")
def scaffold_project_server(directory: Path, force: bool) -> None:
    """Write the project's MCP server (mcp-server/: five introspection tools and their manifest) into DIRECTORY."""
    from jarvis.projectserver.scaffold import ScaffoldError, scaffold_project_server

    try:
        result = scaffold_project_server(directory, force=force)
    except ScaffoldError as exc:
        raise click.ClickException(str(exc)) from None
    for path in result.files:
        click.echo(f"  wrote {path.relative_to(result.root)}")
    click.echo(
        f"Project server scaffolded in {result.root / 'mcp-server'}. Configure "
        "mcp-server/project-server.toml, then run: python -m project_mcp_server --root . "
        "(with mcp-server/src on PYTHONPATH, or after pip install -e mcp-server)."
    )


if __name__ == "__main__":
    cli()
