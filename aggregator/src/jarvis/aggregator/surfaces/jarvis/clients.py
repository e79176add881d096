"""`jarvis_client`: MCP client applications (Claude Desktop, Claude Code, Cursor, VS Code, Windsurf)."""

from __future__ import annotations

from typing import Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.principal import Principal
from jarvis.aggregator.registry_client import to_dict
from jarvis.aggregator.surfaces import schema as s
from jarvis.aggregator.surfaces.base import Action, Tool
from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.common.errors import InvalidArgument

EDIT_FIELDS = ("add_servers", "remove_servers", "add_profiles", "remove_profiles")


def build(ctx: ToolContext) -> Tool:
    reg = ctx.registry

    async def list_(_: dict[str, Any], __: Principal) -> Any:
        resp = await reg.call(reg.registry.ListClients, pb.ListClientsRequest())
        return {"clients": [to_dict(c) for c in resp.clients]}

    async def edit(a: dict[str, Any], _: Principal) -> Any:
        if not any(a.get(f) for f in EDIT_FIELDS):
            raise InvalidArgument(f"jarvis_client action=edit needs one of: {', '.join(EDIT_FIELDS)}")
        req = pb.EditClientRequest(name=a["name"], **{f: a.get(f, []) for f in EDIT_FIELDS})
        return to_dict(await reg.call(reg.registry.EditClient, req))

    async def import_(a: dict[str, Any], _: Principal) -> Any:
        resp = await reg.call(reg.registry.ImportClient, pb.ImportClientRequest(name=a["name"]))
        return {"client": a["name"], **to_dict(resp)}

    async def config(a: dict[str, Any], _: Principal) -> Any:
        req = pb.ClientConfigPathRequest(name=a["name"])
        if a.get("path"):
            req.path = a["path"]
        return to_dict(await reg.call(reg.registry.ClientConfigPath, req))

    return Tool(
        name="jarvis_client",
        description="MCP clients: list|edit|import|config",
        properties={
            "name": s.string("client, e.g. cursor"),
            **{f: s.strings() for f in EDIT_FIELDS},
            "path": s.string("config file path"),
        },
        actions=[
            Action("list", list_, read_only=True, idempotent=True),
            Action("edit", edit, required=("name",)),
            Action("import", import_, required=("name",), admin=True),
            Action("config", config, idempotent=True, required=("name",)),
        ],
    )
