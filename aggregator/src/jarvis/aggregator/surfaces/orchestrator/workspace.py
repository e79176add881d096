"""`workspace`: the project's workspaces (git worktrees or directories): list, delete."""

from __future__ import annotations

from typing import Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.orchestrator.common import PROJECT_ID, WORKSPACE_ID, as_dict, runtime
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.api.runtime.v1 import runtime_pb2 as pb


def build(ctx: ToolContext) -> Tool:
    async def list_(a: dict[str, Any], _: Principal) -> Any:
        rt = runtime(ctx)
        resp = await rt.call(rt.runtime.ListWorkspaces, pb.ProjectRef(project_id=a["project_id"]))
        return {"workspaces": [as_dict(w) for w in resp.workspaces], "count": len(resp.workspaces)}

    async def delete(a: dict[str, Any], _: Principal) -> Any:
        rt = runtime(ctx)
        ref = pb.WorkspaceRef(project_id=a["project_id"], workspace_id=a["workspace_id"])
        return {"deleted": as_dict(await rt.call(rt.long.DeleteWorkspace, ref, timeout=120))}

    return Tool(
        name="workspace",
        description="Workspaces: list|delete",
        properties={"project_id": PROJECT_ID, "workspace_id": WORKSPACE_ID},
        actions=[
            Action("list", list_, read_only=True, idempotent=True, required=("project_id",)),
            Action("delete", delete, destructive=True, required=("project_id", "workspace_id")),
        ],
    )
