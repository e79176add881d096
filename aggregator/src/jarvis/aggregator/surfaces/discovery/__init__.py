"""The default surface (`/mcp`, spec 003): find, describe, load and call any tool Jarvis offers."""

from __future__ import annotations

from typing import Any

from mcp.server import Server

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.mcp_server import Binding
from jarvis.aggregator.surfaces.discovery.server import build_server
from jarvis.aggregator.surfaces.discovery.state import SURFACE, Discovery
from jarvis.aggregator.surfaces.discovery.tools import build_tools
from jarvis.aggregator.tooling.tool import Surface

DISCOVERY_PATH = "/mcp"
INSTRUCTIONS = (
    "Jarvis's tools are many; find the ones you need: tool_find(query), then tool_load(names) to add them "
    "to your tools, or tool_call(name, arguments) to call them directly."
)


class DiscoverySurface(Surface):
    """The discovery surface: five fixed tools in front of the whole catalog."""

    def __init__(self, ctx: ToolContext) -> None:
        self.discovery = Discovery(ctx)
        super().__init__(
            name=SURFACE, path=DISCOVERY_PATH, tools=build_tools(self.discovery), instructions=INSTRUCTIONS
        )
        # Writes that add or remove servers refresh the catalog at once (the jarvis surface announces them).
        ctx.events.catalog_changed.connect(lambda _: self.discovery.catalog.changed())

    def build_server(self, binding: Binding) -> Server[Any]:
        return build_server(self, self.discovery, binding)


def build_discovery_surface(ctx: ToolContext) -> DiscoverySurface:
    return DiscoverySurface(ctx)
