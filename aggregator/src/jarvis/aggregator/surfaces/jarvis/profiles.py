"""`jarvis_profile`: named sets of servers."""

from __future__ import annotations

from typing import Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.downstream import report
from jarvis.aggregator.registry_client import to_dict
from jarvis.aggregator.tooling import schema as s
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.common.errors import InvalidArgument


def build(ctx: ToolContext) -> Tool:
    reg = ctx.registry

    async def list_(_: dict[str, Any], __: Principal) -> Any:
        resp = await reg.call(reg.registry.ListProfiles, pb.ListProfilesRequest())
        return {"profiles": [to_dict(p) for p in resp.profiles], "count": len(resp.profiles)}

    async def create(a: dict[str, Any], _: Principal) -> Any:
        req = pb.CreateProfileRequest(
            name=a["name"], description=a.get("description", ""), servers=a.get("servers", [])
        )
        created = to_dict(await reg.call(reg.registry.CreateProfile, req))
        await report.refresh(ctx.downstream)  # its surface exists from now on
        return {"created": created}

    async def edit(a: dict[str, Any], _: Principal) -> Any:
        fields = {k: a[k] for k in ("new_name", "description") if k in a}
        if not fields and not a.get("add") and not a.get("remove"):
            raise InvalidArgument("jarvis_profile action=edit needs add, remove, new_name or description")
        req = pb.EditProfileRequest(
            name=a["name"], add_servers=a.get("add", []), remove_servers=a.get("remove", []), **fields
        )
        edited = to_dict(await reg.call(reg.registry.EditProfile, req))
        await report.refresh(ctx.downstream)  # membership changes reach connected sessions now
        return {"edited": edited}

    async def delete(a: dict[str, Any], _: Principal) -> Any:
        resp = await reg.call(reg.registry.DeleteProfile, pb.DeleteProfileRequest(name=a["name"]))
        await report.refresh(ctx.downstream)
        return {"deleted": to_dict(resp)}

    async def suggest(a: dict[str, Any], _: Principal) -> Any:
        path = a.get("path") or str(ctx.project_root)
        resp = await reg.call(reg.registry.SuggestProfiles, pb.SuggestProfilesRequest(project_dir=path))
        return {"project": path, **to_dict(resp)}

    async def restart(a: dict[str, Any], _: Principal) -> Any:
        if a.get("name"):
            profiles = [await reg.call(reg.registry.GetProfile, pb.GetProfileRequest(name=a["name"]))]
        else:
            profiles = list((await reg.call(reg.registry.ListProfiles, pb.ListProfilesRequest())).profiles)
        # A server in several profiles restarts once; each profile reports its servers' outcomes.
        outcomes = {
            o["name"]: o for o in await report.restart(ctx.downstream, sorted({n for p in profiles for n in p.servers}))
        }
        return {"restarted": [{"profile": p.name, "servers": [outcomes[n] for n in p.servers]} for p in profiles]}

    return Tool(
        name="jarvis_profile",
        description="Profiles: list|create|edit|delete|suggest|restart",
        properties={
            "name": s.string(),
            "servers": s.strings(),
            "add": s.strings(),
            "remove": s.strings(),
            "description": s.string(),
            "new_name": s.string(),
            "path": s.string("project dir"),
        },
        actions=[
            Action("list", list_, read_only=True, idempotent=True),
            Action("create", create, required=("name",)),
            Action("edit", edit, required=("name",)),
            Action("delete", delete, destructive=True, required=("name",)),
            Action("suggest", suggest, read_only=True, idempotent=True),
            Action("restart", restart),
        ],
    )
