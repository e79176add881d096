"""`jarvis_server`: installed MCP servers and the catalog, through the registry."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from jarvis.aggregator import audit
from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.downstream import report
from jarvis.aggregator.gateways.registry import to_dict
from jarvis.aggregator.tooling import schema as s
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.common.errors import InvalidArgument, PermissionDenied

TRANSPORTS = {
    "stdio": pb.TRANSPORT_STDIO,
    "streamable-http": pb.TRANSPORT_STREAMABLE_HTTP,
    "container": pb.TRANSPORT_CONTAINER,
}


def _summary(server: pb.Server) -> dict[str, Any]:
    launch = server.launch
    where = launch.url or launch.image or " ".join([launch.command, *launch.args]).strip()
    return {
        "name": server.name,
        "transport": pb.Transport.Name(launch.transport).removeprefix("TRANSPORT_").lower().replace("_", "-"),
        "status": server.status,
        "tools": len(server.tools),
        "profiles": list(server.profiles),
        "launch": where,
        "description": server.description,
    }


# What a launch env or header value shows instead of itself: secrets live there.
SET, EMPTY = "<set>", "<empty>"
# A whole-value `${NAME}` reference, which the host resolves from Jarvis's own environment (downstream/host.py).
_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")


def masked(values: Mapping[str, str]) -> dict[str, str]:
    """Names, and for each value only whether it is set, or the `${NAME}` it refers to (never a secret)."""
    return {name: value if _REFERENCE.match(value) else (SET if value else EMPTY) for name, value in values.items()}


def _detail(server: pb.Server) -> dict[str, Any]:
    detail = to_dict(server)
    launch = detail.get("launch", {})
    for field in ("env", "headers"):  # masked for every caller, admin included: results end up in transcripts
        if field in launch:
            launch[field] = masked(launch[field])
    for tool in detail.get("tools", []):
        raw = tool.pop("input_schema_json", "")
        tool["input_schema"] = json.loads(raw) if raw else {}
    return detail


def _set_values(env: dict[str, str | None]) -> dict[str, str]:
    return {k: v for k, v in env.items() if v is not None}


def build(ctx: ToolContext) -> Tool:
    reg = ctx.registry

    async def list_(_: dict[str, Any], __: Principal) -> Any:
        resp = await reg.cached(reg.registry.ListServers, pb.ListServersRequest())
        # The registry knows what is installed; this aggregator knows what runs.
        servers = [{**_summary(x), **report.brief(ctx.downstream, x.name)} for x in resp.servers]
        return {"servers": servers, "count": len(resp.servers)}

    async def info(a: dict[str, Any], _: Principal) -> Any:
        server = await reg.call(reg.registry.GetServer, pb.GetServerRequest(name=a["name"]))
        runtime = await report.detail(ctx.downstream, reg, server.name)
        return {**_detail(server), "status": runtime["state"], "runtime": runtime}

    async def install(a: dict[str, Any], _: Principal) -> Any:
        req = pb.InstallServerRequest(catalog_name=a["name"], name=a.get("new_name", ""), env=a.get("env", {}))
        installed = _detail(await reg.call(reg.registry.InstallServer, req))
        await report.refresh(ctx.downstream)
        await ctx.events.catalog_changed.emit(None)
        return {"installed": installed}

    async def uninstall(a: dict[str, Any], _: Principal) -> Any:
        resp = await reg.call(reg.registry.UninstallServer, pb.UninstallServerRequest(name=a["name"]))
        await report.refresh(ctx.downstream)  # stops it
        await ctx.events.catalog_changed.emit(None)
        return {"uninstalled": to_dict(resp)}

    async def search(a: dict[str, Any], _: Principal) -> Any:
        req = pb.SearchServersRequest(query=a["query"], limit=a.get("limit", 0))
        resp = await reg.call(reg.registry.SearchServers, req)
        return {"query": a["query"], "results": [to_dict(h) for h in resp.hits]}

    async def create(a: dict[str, Any], _: Principal) -> Any:
        launch = pb.LaunchSpec(
            transport=TRANSPORTS[a["type"]],
            command=a.get("command", ""),
            args=a.get("args", []),
            env=_set_values(a.get("env", {})),
            url=a.get("url", ""),
            image=a.get("image", ""),
        )
        req = pb.CreateServerRequest(name=a["name"], description=a.get("description", ""), launch=launch)
        created = _detail(await reg.call(reg.registry.CreateServer, req))
        await report.refresh(ctx.downstream)
        await ctx.events.catalog_changed.emit(None)
        return {"created": created}

    async def edit(a: dict[str, Any], _: Principal) -> Any:
        fields = {k: a[k] for k in ("new_name", "description", "command", "url", "image") if k in a}
        if not fields and not any(k in a for k in ("args", "env")):
            raise InvalidArgument(
                "jarvis_server action=edit needs something to change: new_name, description, command, "
                "args, env (a null value removes a variable), url or image"
            )
        env = a.get("env", {})
        req = pb.EditServerRequest(
            name=a["name"],
            args=a.get("args", []),
            replace_args="args" in a,
            set_env=_set_values(env),
            unset_env=[k for k, v in env.items() if v is None],
            **fields,
        )
        edited = _detail(await reg.call(reg.registry.EditServer, req))
        await report.refresh(ctx.downstream)  # a changed launch spec restarts it
        await ctx.events.catalog_changed.emit(None)
        return {"edited": edited}

    async def usage(a: dict[str, Any], principal: Principal) -> Any:
        await ctx.usage.flush()
        if a.get("audit"):
            return await audit_log(a, principal)
        resp = await reg.call(reg.registry.GetUsage, pb.GetUsageRequest(tool=a.get("name", "")))
        return {"usage": [to_dict(x) for x in resp.stats]}

    async def audit_log(a: dict[str, Any], principal: Principal) -> Any:
        # Who called what is everyone's business only with admin, though `usage` itself is a read.
        if not principal.may("jarvis", "jarvis_server", "usage", read_only=False, admin=True):
            raise PermissionDenied("jarvis_server action=usage audit=true needs a token with the admin scope")
        request = pb.ListAuditRequest(tool=a.get("name", ""), token=a.get("query", ""), limit=a.get("limit", 100))
        entries = (await reg.call(reg.registry.ListAudit, request)).entries
        return {"audit": [audit.entry_json(e) for e in entries]}

    return Tool(
        name="jarvis_server",
        description="Servers list|info|install|uninstall|search|edit|create|usage",
        properties={
            "name": s.string(),
            "query": s.string(),
            "type": s.string(enum=list(TRANSPORTS)),
            "command": s.string(),
            "args": s.strings(),
            "env": s.string_map("null unsets", nullable=True),
            "url": s.string(),
            "image": s.string(),
            "description": s.string(),
            "new_name": s.string(),
            "limit": s.integer(minimum=1, maximum=100),
            "audit": s.boolean(),
        },
        actions=[
            Action("list", list_, read_only=True, idempotent=True),
            Action("info", info, read_only=True, idempotent=True, required=("name",)),
            Action("install", install, required=("name",), admin=True),
            Action("uninstall", uninstall, destructive=True, required=("name",)),
            Action("search", search, read_only=True, idempotent=True, required=("query",)),
            Action("edit", edit, required=("name",), admin=True),
            Action("create", create, required=("name", "type"), admin=True),
            Action("usage", usage, read_only=True, idempotent=True),
        ],
    )
