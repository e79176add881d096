"""`jarvis_client`: MCP client applications (Claude Desktop, Claude Code, Cursor, VS Code, Windsurf, Codex CLI,
Gemini CLI, Goose, Continue, Cline, Roo Code, OpenCode, Zed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.gateways.registry import ClientEdit
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.aggregator.views.registry import ClientConfigPath, ClientEdited, ClientView
from jarvis.common.errors import InvalidArgument, JarvisError, PermissionDenied
from jarvis.common.params import Arg, Named, NoParams

PROFILE_PREFIX = "profile:"
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


def _split(names: list[str]) -> tuple[list[str], list[str]]:
    """`add`/`remove` name servers, or profiles as `profile:<name>` (one list keeps the schema small)."""
    servers = [n for n in names if not n.startswith(PROFILE_PREFIX)]
    profiles = [n.removeprefix(PROFILE_PREFIX) for n in names if n.startswith(PROFILE_PREFIX)]
    return servers, profiles


async def _authorization(ctx: ToolContext, client: str, profiles: list[str], principal: Principal) -> tuple[str, str]:
    """The bearer a client's profile entries need (an HTTP header, or a stdio entry's JARVIS_TOKEN) and its
    token's id, or ("", "").

    When this instance requires tokens, a token scoped to exactly those profiles is made for the
    entry (named after the client, so `token list` shows where it lives and `token revoke` ends it).
    The caller must already reach every one of the profiles: an edit never grants more than the
    caller has.
    """
    if ctx.auth_mode != "token required" or not profiles:
        return "", ""
    # Stdio entries need it too: their `jarvis mcp` relays to this instance, which checks it (JARVIS_TOKEN).
    missing = [p for p in profiles if not principal.may("profile", p, "", read_only=False, admin=False)]
    if missing:
        raise PermissionDenied(
            f"your token does not reach profile {', '.join(missing)}, so Jarvis will not write a client entry "
            f"with a token for it; ask an admin for a token with scope profile:{missing[0]}"
        )
    created = await ctx.registry.create_token(
        f"client:{client}:{','.join(profiles)}"[:200], [f"profile:{p}" for p in profiles]
    )
    return f"Bearer {created.secret}", created.token.id


def build(ctx: ToolContext) -> Tool:
    registry = ctx.registry

    async def list_(_: NoParams, __: Principal) -> ClientList:
        return ClientList(await registry.list_clients())

    async def edit(p: Edit, principal: Principal) -> ClientEdited:
        if not p.add and not p.remove:
            raise InvalidArgument(
                "jarvis_client action=edit needs add or remove: server names, or profile:<name> for profiles"
            )
        add_servers, add_profiles = _split(p.add)
        remove_servers, remove_profiles = _split(p.remove)
        authorization, token_id = await _authorization(ctx, p.name, add_profiles, principal)
        change = ClientEdit(p.name, add_servers, add_profiles, remove_servers, remove_profiles, authorization, p.path)
        try:
            return await registry.edit_client(change)
        except JarvisError:
            if token_id:  # the entry was not written: its token must not outlive the refusal
                await registry.revoke_token(token_id)
            raise

    async def import_(p: Named, _: Principal) -> Imported:
        imported = await registry.import_client(p.name)
        await ctx.events.catalog_changed.emit(None)
        return Imported(p.name, imported.imported, imported.skipped)

    async def config(p: Config, _: Principal) -> ClientConfigPath:
        return await registry.client_config_path(p.name, p.path)

    return Tool(
        name="jarvis_client",
        description="MCP clients: list|edit|import|config",
        actions=[
            Action("list", list_, NoParams, read_only=True, idempotent=True),
            # A path of the caller's choosing is a write target: admin only, as for config.
            Action("edit", edit, Edit, admin_if=lambda a: bool(a.get("path"))),
            Action("import", import_, Named, admin=True),
            # Any path but the default one is a write target of the caller's choosing: admin only.
            Action("config", config, Config, idempotent=True, admin_if=lambda a: bool(a.get("path"))),
        ],
    )
