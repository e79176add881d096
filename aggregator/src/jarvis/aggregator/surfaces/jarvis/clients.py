"""`jarvis_client`: MCP client applications (Claude Desktop, Claude Code, Cursor, VS Code, Windsurf, Codex CLI,
Gemini CLI, Goose, Continue, Cline, Roo Code, OpenCode, Zed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.jarvis.client_edits import client_edit, write_client_edit
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.aggregator.views.registry import ClientConfigPath, ClientEdited, ClientView
from jarvis.common.params import Arg, Named, NoParams

Path = Annotated[str | None, Arg("config file")]


@dataclass(frozen=True)
class Edit:
    name: str
    add: Annotated[list[str], Arg("server or profile:<name>")] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)
    path: Path = None  # this edit only; the same path rules as action=config


@dataclass(frozen=True)
class Config:
    name: str
    path: Path = None  # "" goes back to the client's default location


@dataclass(frozen=True)
class ClientList:
    clients: list[ClientView]


@dataclass(frozen=True)
class Imported:
    client: str
    imported: list[str]
    skipped: list[str]


def build(ctx: ToolContext) -> Tool:
    registry = ctx.registry

    async def list_(_: NoParams, __: Principal) -> ClientList:
        return ClientList(await registry.list_clients())

    async def edit(p: Edit, principal: Principal) -> ClientEdited:
        change, added = client_edit(p.name, p.add, p.remove, p.path)
        # A caller who signed in shows that this Jarvis serves sign-in: a client that signs in then needs no token.
        return await write_client_edit(
            registry,
            change,
            added,
            principal,
            tokens_required=ctx.auth_mode == "token required",
            sign_in=bool(principal.user),
        )

    async def import_(p: Named, _: Principal) -> Imported:
        imported = await registry.import_client(p.name)
        await ctx.events.catalog_changed.emit(None)
        return Imported(p.name, imported.imported, imported.skipped)

    async def config(p: Config, _: Principal) -> ClientConfigPath:
        return await registry.client_config_path(p.name, p.path)

    return Tool(
        name="jarvis_client",
        description="MCP clients: list|edit|import|config",
        summary=(
            "MCP client apps (Claude Desktop, Claude Code, Cursor, VS Code, Windsurf): list them, write Jarvis into "
            "their config files, import the servers their configs hold, show the config to paste."
        ),
        actions=[
            Action("list", list_, NoParams, read_only=True, idempotent=True),
            # A path of the caller's choosing is a write target: admin only, as for config.
            Action("edit", edit, Edit, admin_if=lambda a: bool(a.get("path"))),
            Action("import", import_, Named, admin=True),
            # Any path but the default one is a write target of the caller's choosing: admin only.
            Action("config", config, Config, idempotent=True, admin_if=lambda a: bool(a.get("path"))),
        ],
    )
