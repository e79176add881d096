"""`jarvis_share`: expose one installed server at its own URL with a token valid for that share only."""

from __future__ import annotations

from typing import Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.downstream.shares import Shares
from jarvis.aggregator.tooling import schema as s
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.common.errors import FailedPrecondition


def build(ctx: ToolContext) -> Tool:
    def shares() -> Shares:
        if ctx.shares is None:
            raise FailedPrecondition(
                "sharing needs a running aggregator (jarvis up or jarvis serve aggregator); "
                "this process does not serve HTTP"
            )
        return ctx.shares

    async def start(a: dict[str, Any], _: Principal) -> Any:
        return {
            "started": await shares().start(
                a["name"].strip().lower(),
                a.get("expires_in"),
                a.get("tunnel") or "none",
                a.get("port"),
                a.get("host_key"),
            )
        }

    async def stop(a: dict[str, Any], _: Principal) -> Any:
        return await shares().stop(a["name"].strip().lower())

    async def list_(_: dict[str, Any], __: Principal) -> Any:
        return {"shares": await shares().listing()}

    return Tool(
        name="jarvis_share",
        description="Share a server: start|stop|list",
        properties={
            "name": s.string(),
            "expires_in": s.integer("seconds", minimum=60),
            "tunnel": s.string(),
            "port": s.integer(),  # the tunnel's port on the far host
            "host_key": s.string(),
        },
        actions=[
            Action("start", start, required=("name",), admin=True),
            Action("stop", stop, destructive=True, required=("name",)),
            Action("list", list_, read_only=True, idempotent=True),
        ],
    )
