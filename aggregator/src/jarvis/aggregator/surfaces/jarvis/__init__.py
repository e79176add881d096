"""The `jarvis` surface (spec 000): exactly eight consolidated `jarvis_*` tools."""

from __future__ import annotations

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.jarvis import (
    clients,
    config,
    profiles,
    project,
    servers,
    share,
    status,
    system,
)
from jarvis.aggregator.surfaces.paths import JARVIS_PATH
from jarvis.aggregator.tooling.tool import Surface


def build_jarvis_surface(ctx: ToolContext) -> Surface:
    return Surface(
        name="jarvis",
        path=JARVIS_PATH,
        tools=[
            status.build(ctx),
            servers.build(ctx),
            profiles.build(ctx),
            clients.build(ctx),
            config.build(ctx),
            project.build(ctx),
            system.build(ctx),
            share.build(ctx),
        ],
        instructions="Manage Jarvis: MCP servers, profiles, client configs, config, projects.",
    )
