"""`jarvis_system`: bootstrap, graceful restart, restart of managed infrastructure."""

from __future__ import annotations

from typing import Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.tooling import schema as s
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool


def build(ctx: ToolContext) -> Tool:
    async def bootstrap(a: dict[str, Any], _: Principal) -> Any:
        return await ctx.system.bootstrap(bool(a.get("restore", False)))

    async def restart(_: dict[str, Any], __: Principal) -> Any:
        return await ctx.system.request_restart()

    async def restart_infra(_: dict[str, Any], __: Principal) -> Any:
        return await ctx.system.restart_infra()

    return Tool(
        name="jarvis_system",
        description="System: bootstrap|restart|restart_infra",
        properties={"restore": s.boolean()},
        actions=[
            Action("bootstrap", bootstrap, idempotent=True, admin=True),
            Action("restart", restart, admin=True),
            Action("restart_infra", restart_infra, admin=True),
        ],
    )
