"""`jarvis_share`: expose one installed server at its own URL (needs the downstream-server host)."""

from __future__ import annotations

from typing import Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.principal import Principal
from jarvis.aggregator.surfaces import schema as s
from jarvis.aggregator.surfaces.base import Action, Tool
from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.common.errors import FailedPrecondition

UNAVAILABLE = (
    "sharing is not available yet: it proxies a running server, and Jarvis does not host downstream "
    "servers until the downstream-server work lands; nothing was shared or changed"
)


def build(ctx: ToolContext) -> Tool:
    reg = ctx.registry

    async def start(a: dict[str, Any], _: Principal) -> Any:
        # Check the server exists first, so a typo gets the more useful error.
        await reg.call(reg.registry.GetServer, pb.GetServerRequest(name=a["name"]))
        raise FailedPrecondition(f"cannot share '{a['name']}': {UNAVAILABLE}")

    async def stop(a: dict[str, Any], _: Principal) -> Any:
        raise FailedPrecondition(f"'{a['name']}' is not shared: {UNAVAILABLE}")

    async def list_(_: dict[str, Any], __: Principal) -> Any:
        return {"shares": [], "note": UNAVAILABLE}

    return Tool(
        name="jarvis_share",
        description="Share a server: start|stop|list",
        properties={"name": s.string(), "expires_in": s.integer("seconds", minimum=60)},
        actions=[
            Action("start", start, required=("name",), admin=True),
            Action("stop", stop, destructive=True, required=("name",)),
            Action("list", list_, read_only=True, idempotent=True),
        ],
    )
