"""`jarvis_client`: MCP client applications (Claude Desktop, Claude Code, Cursor, VS Code, Windsurf, Codex CLI,
Gemini CLI, Goose, Continue, Cline, Roo Code, OpenCode, Zed)."""

from __future__ import annotations

from typing import Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.gateways.registry import to_dict
from jarvis.aggregator.tooling import schema as s
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.common.errors import InvalidArgument, JarvisError, PermissionDenied

PROFILE_PREFIX = "profile:"


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
    reg = ctx.registry
    missing = [p for p in profiles if not principal.may("profile", p, "", read_only=False, admin=False)]
    if missing:
        raise PermissionDenied(
            f"your token does not reach profile {', '.join(missing)}, so Jarvis will not write a client entry "
            f"with a token for it; ask an admin for a token with scope profile:{missing[0]}"
        )
    resp = await reg.call(
        reg.registry.CreateToken,
        pb.CreateTokenRequest(
            name=f"client:{client}:{','.join(profiles)}"[:200], scopes=[f"profile:{p}" for p in profiles]
        ),
    )
    return f"Bearer {resp.secret}", resp.token.id


def build(ctx: ToolContext) -> Tool:
    reg = ctx.registry

    async def list_(_: dict[str, Any], __: Principal) -> Any:
        resp = await reg.call(reg.registry.ListClients, pb.ListClientsRequest())
        return {"clients": [to_dict(c) for c in resp.clients]}

    async def edit(a: dict[str, Any], principal: Principal) -> Any:
        if not a.get("add") and not a.get("remove"):
            raise InvalidArgument(
                "jarvis_client action=edit needs add or remove: server names, or profile:<name> for profiles"
            )
        add_servers, add_profiles = _split(a.get("add", []))
        remove_servers, remove_profiles = _split(a.get("remove", []))
        authorization, token_id = await _authorization(ctx, a["name"], add_profiles, principal)
        req = pb.EditClientRequest(
            name=a["name"],
            add_servers=add_servers,
            add_profiles=add_profiles,
            remove_servers=remove_servers,
            remove_profiles=remove_profiles,
            authorization=authorization,
        )
        if "path" in a:  # this edit only; the same path rules as action=config
            req.path = a["path"]
        try:
            return to_dict(await reg.call(reg.registry.EditClient, req))
        except JarvisError:
            if token_id:  # the entry was not written: its token must not outlive the refusal
                await reg.call(reg.registry.RevokeToken, pb.RevokeTokenRequest(id=token_id))
            raise

    async def import_(a: dict[str, Any], _: Principal) -> Any:
        resp = await reg.call(reg.registry.ImportClient, pb.ImportClientRequest(name=a["name"]))
        await ctx.events.catalog_changed.emit(None)
        return {"client": a["name"], **to_dict(resp)}

    async def config(a: dict[str, Any], _: Principal) -> Any:
        req = pb.ClientConfigPathRequest(name=a["name"])
        if "path" in a:  # "" goes back to the client's default location
            req.path = a["path"]
        return to_dict(await reg.call(reg.registry.ClientConfigPath, req))

    return Tool(
        name="jarvis_client",
        description="MCP clients: list|edit|import|config",
        properties={
            "name": s.string(),
            "add": s.strings("server or profile:<name>"),
            "remove": s.strings(),
            "path": s.string("config file"),
        },
        actions=[
            Action("list", list_, read_only=True, idempotent=True),
            # A path of the caller's choosing is a write target: admin only, as for config.
            Action("edit", edit, required=("name",), admin_if=lambda a: bool(a.get("path"))),
            Action("import", import_, required=("name",), admin=True),
            # Any path but the default one is a write target of the caller's choosing: admin only.
            Action("config", config, idempotent=True, required=("name",), admin_if=lambda a: bool(a.get("path"))),
        ],
    )
