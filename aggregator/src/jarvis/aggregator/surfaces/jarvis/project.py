"""`jarvis_project`: analyse a project, show its diff, scaffold DevOps config."""

from __future__ import annotations

from typing import Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.gateways.registry import to_dict
from jarvis.aggregator.tooling import schema as s
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.api.registry.v1 import project_pb2 as pb

STACKS = ["python", "node", "go", "rust"]


def build(ctx: ToolContext) -> Tool:
    reg = ctx.registry

    def path_of(a: dict[str, Any]) -> str:
        return str(a.get("path") or ctx.project_root)

    async def analyze(a: dict[str, Any], _: Principal) -> Any:
        return to_dict(await reg.call(reg.project.Analyze, pb.AnalyzeRequest(path=path_of(a))))

    async def diff(a: dict[str, Any], _: Principal) -> Any:
        req = pb.DiffRequest(path=path_of(a), staged=bool(a.get("staged", False)))
        return to_dict(await reg.call(reg.project.Diff, req))

    async def devops(a: dict[str, Any], _: Principal) -> Any:
        req = pb.ApplyDevopsRequest(
            path=path_of(a), stack=a.get("type", ""), force=bool(a.get("force")), dry_run=bool(a.get("dry_run"))
        )
        return to_dict(await reg.call(reg.project.ApplyDevops, req, timeout=60))

    return Tool(
        name="jarvis_project",
        description="Project: analyze|diff|devops",
        properties={
            "path": s.string("project dir"),
            "staged": s.boolean(),
            "type": s.string(enum=STACKS),
            "force": s.boolean(),
            "dry_run": s.boolean(),
        },
        actions=[
            Action("analyze", analyze, read_only=True, idempotent=True),
            Action("diff", diff, read_only=True, idempotent=True),
            Action("devops", devops),
        ],
    )
