"""The default surface (`/mcp`, spec 003): find, describe, load and call any tool Jarvis offers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp.server import Server

from jarvis.aggregator.codemode.limits import CodePolicy
from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.mcp_server import Binding
from jarvis.aggregator.surfaces.discovery.server import build_server
from jarvis.aggregator.surfaces.discovery.state import SURFACE, Discovery
from jarvis.aggregator.surfaces.discovery.tools import build_tools
from jarvis.aggregator.surfaces.paths import DISCOVERY_PATH
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Surface

INSTRUCTIONS = (
    "Jarvis's tools are many; find the ones you need: tool_find(query), then tool_load(names) to add them "
    "to your tools, or tool_call(name, arguments) to call them directly."
)


class DiscoverySurface(Surface):
    """The discovery surface: five fixed tools in front of the whole catalog."""

    def __init__(self, ctx: ToolContext, code: CodePolicy | None = None) -> None:
        self.discovery = Discovery(ctx, code)
        super().__init__(
            name=SURFACE, path=DISCOVERY_PATH, tools=build_tools(self.discovery), instructions=INSTRUCTIONS
        )
        # Writes that add or remove servers refresh the catalog at once (the jarvis surface announces them).
        ctx.events.catalog_changed.connect(lambda _: self.discovery.catalog.changed())

    def limit_key(self, principal: Principal, name: str, arguments: Mapping[str, Any]) -> str | None:
        """`tool_call` and a loaded tool called by name are limited as the tool they run, under the key its own
        surface uses (`jarvis_config`, `hard__slow`), so this route is neither a way around a tool's rate limit
        nor a second pool of calls in flight."""
        if name == "tool_call":
            inner = arguments.get("name")
            return self.discovery.limit_key(inner.strip(), principal) if isinstance(inner, str) else None
        if self.has(name):
            return name
        return self.discovery.limit_key(name, principal)

    def build_server(self, binding: Binding) -> Server[Any]:
        return build_server(self, self.discovery, binding)


def build_discovery_surface(ctx: ToolContext, code: CodePolicy | None = None) -> DiscoverySurface:
    return DiscoverySurface(ctx, code)
