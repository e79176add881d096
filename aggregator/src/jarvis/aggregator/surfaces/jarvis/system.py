"""`jarvis_system`: bootstrap, graceful restart, restart of managed infrastructure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.common.params import NoParams

# What the process running this aggregator reports (the CLI's embedded stack or a standalone aggregator):
# its steps and outcomes differ by how Jarvis runs.
SystemReport = dict[str, Any]


@dataclass(frozen=True)
class Bootstrap:
    restore: bool = False


def build(ctx: ToolContext) -> Tool:
    async def bootstrap(p: Bootstrap, _: Principal) -> SystemReport:
        return await ctx.system.bootstrap(p.restore)

    async def restart(_: NoParams, __: Principal) -> SystemReport:
        return await ctx.system.request_restart()

    async def restart_infra(_: NoParams, __: Principal) -> SystemReport:
        return await ctx.system.restart_infra()

    return Tool(
        name="jarvis_system",
        description="System: bootstrap|restart|restart_infra",
        summary=(
            "Jarvis's own processes: bootstrap (seed the catalog and defaults), restart Jarvis, restart its "
            "infrastructure services."
        ),
        actions=[
            Action("bootstrap", bootstrap, Bootstrap, idempotent=True, admin=True),
            Action("restart", restart, NoParams, admin=True),
            Action("restart_infra", restart_infra, NoParams, admin=True),
        ],
    )
