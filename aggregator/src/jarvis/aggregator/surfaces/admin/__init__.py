"""The `admin` surface at /mcp/admin: people and roles (decision 0069).

Its tools are an admin's only (every action needs the `admin` scope), so it is a small listing only admins reach; the
`jarvis` and `orchestrator` surfaces keep exactly the tools their specs (000, 001) name.
"""

from __future__ import annotations

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.admin import people
from jarvis.aggregator.surfaces.paths import ADMIN_PATH
from jarvis.aggregator.tooling.tool import Surface


def build_admin_surface(ctx: ToolContext) -> Surface:
    return Surface(
        name="admin",
        path=ADMIN_PATH,
        tools=[*people.build(ctx)],
        instructions="Administer who may use Jarvis: the people who signed in, and the roles that give them scopes.",
    )
