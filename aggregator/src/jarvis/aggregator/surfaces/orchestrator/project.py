"""`project`: create (optionally cloning a git source), list, get, delete."""

from __future__ import annotations

from typing import Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.principal import Principal
from jarvis.aggregator.surfaces import schema as s
from jarvis.aggregator.surfaces.base import Action, Tool
from jarvis.aggregator.surfaces.orchestrator.common import PROJECT_ID, as_dict, runtime
from jarvis.api.runtime.v1 import runtime_pb2 as pb

CREATE_TIMEOUT = 400.0  # a clone may take the runtime's clone limit (300 s by default)


def build(ctx: ToolContext) -> Tool:
    async def create(a: dict[str, Any], _: Principal) -> Any:
        rt = runtime(ctx)
        req = pb.CreateProjectRequest(name=a["name"], source_url=a.get("source_url", ""), image=a.get("image", ""),
                                      agent_command=a.get("agent_command", []),
                                      agent_protocol=a.get("agent_protocol", ""), network=a.get("network", False),
                                      egress_allow=a.get("egress_allow", []))
        return {"created": as_dict(await rt.call(rt.long.CreateProject, req, timeout=CREATE_TIMEOUT))}

    async def list_(_: dict[str, Any], __: Principal) -> Any:
        rt = runtime(ctx)
        resp = await rt.call(rt.runtime.ListProjects, pb.ListProjectsRequest())
        return {"projects": [as_dict(p) for p in resp.projects], "count": len(resp.projects)}

    async def get(a: dict[str, Any], _: Principal) -> Any:
        rt = runtime(ctx)
        return as_dict(await rt.call(rt.runtime.GetProject, pb.ProjectRef(project_id=a["project_id"])))

    async def delete(a: dict[str, Any], _: Principal) -> Any:
        rt = runtime(ctx)
        resp = await rt.call(rt.long.DeleteProject, pb.ProjectRef(project_id=a["project_id"]), timeout=120)
        return {"deleted": as_dict(resp)}

    return Tool(
        name="project",
        description="Projects: create|list|get|delete",
        properties={
            "project_id": PROJECT_ID,
            "name": s.string(),
            "source_url": s.string("git repo to clone"),
            "image": s.string(),
            "agent_command": s.strings(),
            "agent_protocol": s.string(enum=["stream-json", "text"]),
            "network": s.boolean(),
            "egress_allow": s.strings("hosts agents may reach"),
        },
        actions=[
            Action("create", create, required=("name",)),
            Action("list", list_, read_only=True, idempotent=True),
            Action("get", get, read_only=True, idempotent=True, required=("project_id",)),
            Action("delete", delete, destructive=True, idempotent=True, required=("project_id",)),
        ],
    )
