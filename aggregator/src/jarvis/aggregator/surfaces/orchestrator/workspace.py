"""`workspace`: the project's workspaces (git worktrees or directories): list, delete."""

from __future__ import annotations

from dataclasses import dataclass

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.orchestrator.common import ProjectScoped, runtime
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.aggregator.views.runtime import WorkspaceDeleted, WorkspaceView


@dataclass(frozen=True)
class WorkspaceNamed:
    project_id: str
    workspace_id: str


@dataclass(frozen=True)
class WorkspaceList:
    workspaces: list[WorkspaceView]
    count: int


@dataclass(frozen=True)
class Deleted:
    deleted: WorkspaceDeleted


@dataclass(frozen=True)
class WorkspaceActions:
    ctx: ToolContext

    async def list_(self, p: ProjectScoped, _: Principal) -> WorkspaceList:
        workspaces = await runtime(self.ctx).list_workspaces(p.project_id)
        return WorkspaceList(workspaces, len(workspaces))

    async def delete(self, p: WorkspaceNamed, _: Principal) -> Deleted:
        return Deleted(await runtime(self.ctx).delete_workspace(p.project_id, p.workspace_id))


def build(ctx: ToolContext) -> Tool:
    a = WorkspaceActions(ctx)
    return Tool(
        name="workspace",
        description="Workspaces: list|delete",
        summary="Workspaces, the working copies of a project that agent sessions edit: list them, delete one.",
        actions=[
            Action("list", a.list_, ProjectScoped, read_only=True, idempotent=True),
            Action("delete", a.delete, WorkspaceNamed, destructive=True),
        ],
    )
