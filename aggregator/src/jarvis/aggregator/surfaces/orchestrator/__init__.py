"""The `orchestrator` surface (spec 001): projects, containers, sessions, workspaces, tokens, schedules, and the six
standalone tools: exactly the twelve tools the spec names."""

from __future__ import annotations

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.orchestrator import (
    container,
    project,
    schedule,
    session,
    standalone,
    token,
    workspace,
)
from jarvis.aggregator.surfaces.paths import ORCHESTRATOR_PATH
from jarvis.aggregator.tooling.tool import Surface


def build_orchestrator_surface(ctx: ToolContext) -> Surface:
    return Surface(
        name="orchestrator",
        path=ORCHESTRATOR_PATH,
        tools=[
            project.build(ctx),
            container.build(ctx),
            session.build(ctx),
            workspace.build(ctx),
            token.build(ctx),
            schedule.build(ctx),
            *standalone.build(ctx),
        ],
        instructions="Run projects in containers and agent sessions in their workspaces.",
    )
