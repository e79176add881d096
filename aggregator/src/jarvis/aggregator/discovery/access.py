"""Which catalog entries a caller may see: exactly those its token would let it call.

A Jarvis tool is visible when the token allows at least one of its actions. A downstream
server's tool (installed or still in the catalog) is addressed by scopes as
`servers:<server>[:<tool>]`, so an operator can hand out one server without the rest.
"""

from __future__ import annotations

from collections.abc import Callable

from jarvis.aggregator.discovery.entry import ToolEntry
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Tool

# The scope "surface" of downstream servers' tools: `servers`, `servers:github`, `servers:github:create_issue`.
DOWNSTREAM_SCOPE = "servers"

Resolver = Callable[[str], "tuple[str, Tool] | None"]


def sees_everything(principal: Principal) -> bool:
    return principal.sees_everything


def may_call_tool(principal: Principal, surface: str, tool: Tool) -> bool:
    """Whether `principal` may call at least one action of `tool` (on at least one of its projects)."""
    return tool.callable_by(principal, surface)


def may_call_downstream(principal: Principal, entry: ToolEntry) -> bool:
    # Unknown effects: a downstream tool is never treated as read-only, so `read` does not reach it.
    return principal.may(DOWNSTREAM_SCOPE, entry.source, entry.tool.lower(), read_only=False, admin=False)


def visible_to(principal: Principal, resolve: Resolver) -> Callable[[ToolEntry], bool]:
    """A filter accepting the entries `principal` may call; `resolve` maps a Jarvis tool to its surface."""
    decided: dict[str, bool] = {}

    def allowed(entry: ToolEntry) -> bool:
        known = decided.get(entry.name)
        if known is None:
            if entry.kind == "surface":
                route = resolve(entry.name)
                known = route is not None and may_call_tool(principal, route[0], route[1])
            else:
                known = may_call_downstream(principal, entry)
            decided[entry.name] = known
        return known

    return allowed
