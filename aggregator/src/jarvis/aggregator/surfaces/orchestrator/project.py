"""`project`: create (optionally cloning a git source), list, get, delete; its secrets, which are write-only."""

from __future__ import annotations

from typing import Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.orchestrator.common import PROJECT_ID, as_dict, runtime
from jarvis.aggregator.tooling import schema as s
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.api.runtime.v1 import runtime_pb2 as pb

CREATE_TIMEOUT = 400.0  # a clone may take the runtime's clone limit (300 s by default)


def build(ctx: ToolContext) -> Tool:
    async def create(a: dict[str, Any], _: Principal) -> Any:
        rt = runtime(ctx)
        req = pb.CreateProjectRequest(
            name=a["name"],
            source_url=a.get("source_url", ""),
            image=a.get("image", ""),
            agent_command=a.get("agent_command", []),
            agent_protocol=a.get("agent_protocol", ""),
            network=a.get("network", False),
            egress_allow=a.get("egress_allow", []),
            agent=a.get("agent", ""),
        )
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

    async def secret_set(a: dict[str, Any], _: Principal) -> Any:
        rt = runtime(ctx)
        req = pb.SetSecretRequest(project_id=a["project_id"], name=a["name"], value=a["value"])
        return {"stored": as_dict(await rt.call(rt.runtime.SetSecret, req))}

    async def secret_list(a: dict[str, Any], _: Principal) -> Any:
        rt = runtime(ctx)
        resp = await rt.call(rt.runtime.ListSecrets, pb.ProjectRef(project_id=a["project_id"]))
        return {"secrets": [as_dict(x) for x in resp.secrets], "count": len(resp.secrets)}

    async def secret_delete(a: dict[str, Any], _: Principal) -> Any:
        rt = runtime(ctx)
        req = pb.SecretRef(project_id=a["project_id"], name=a["name"])
        return {"deleted": as_dict(await rt.call(rt.runtime.DeleteSecret, req))}

    return Tool(
        name="project",
        description="create|list|get|delete|secret_set|secret_list|secret_delete",
        properties={
            "project_id": PROJECT_ID,
            "name": s.string(),
            "value": s.string("write-only"),
            "agent": s.string("claude|codex|gemini|opencode|aider"),
            "source_url": s.string("git repo to clone"),
            "image": s.string(),
            "agent_command": s.strings(),
            "agent_protocol": s.string(enum=["stream-json", "codex-json", "gemini-json", "opencode-json", "text"]),
            "network": s.boolean(),
            "egress_allow": s.strings("hosts agents may reach"),
        },
        actions=[
            Action("create", create, required=("name",)),
            Action("list", list_, read_only=True, idempotent=True),
            Action("get", get, read_only=True, idempotent=True, required=("project_id",)),
            Action("delete", delete, destructive=True, idempotent=True, required=("project_id",)),
            Action("secret_set", secret_set, idempotent=True, required=("project_id", "name", "value")),
            Action("secret_list", secret_list, read_only=True, idempotent=True, required=("project_id",)),
            Action("secret_delete", secret_delete, destructive=True, required=("project_id", "name")),
        ],
    )
