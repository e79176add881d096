"""The `admin` surface at /mcp/admin: people and roles (decision 0069), the hosted servers' restarts and quarantined
tools, and the audit log (the console's admin pages call them too).

Its tools are an admin's only (every action needs the `admin` scope), so it is a small listing only admins reach; the
`jarvis` and `orchestrator` surfaces keep exactly the tools their specs (000, 001) name.
"""

from __future__ import annotations

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.admin import people, servers
from jarvis.aggregator.surfaces.paths import ADMIN_PATH
from jarvis.aggregator.tooling.tool import Surface


def build_admin_surface(ctx: ToolContext) -> Surface:
    return Surface(
        name="admin",
        path=ADMIN_PATH,
        tools=[*people.build(ctx), *servers.build(ctx)],
        instructions=(
            "Administer Jarvis: the people who signed in, the roles that give them scopes, the hosted servers' "
            "restarts and quarantined tools, and the audit log."
        ),
    )
