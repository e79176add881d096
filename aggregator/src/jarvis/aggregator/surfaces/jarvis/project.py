"""`jarvis_project`: analyse a project, show its diff, scaffold DevOps config."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.aggregator.views.registry import DevopsApplied, ProjectAnalysis, ProjectDiff
from jarvis.common.params import Arg

ProjectDir = Annotated[str, Arg("project dir")]


@dataclass(frozen=True)
class Analyze:
    path: ProjectDir = ""  # "": this aggregator's project root


@dataclass(frozen=True)
class Diff:
    path: ProjectDir = ""
    staged: bool = False


@dataclass(frozen=True)
class Devops:
    path: ProjectDir = ""
    type: Literal["python", "node", "go", "rust"] | None = None  # None: the registry detects the stack
    force: bool = False
    dry_run: bool = False


def build(ctx: ToolContext) -> Tool:
    registry = ctx.registry

    def path_of(path: str) -> str:
        return path or str(ctx.project_root)

    async def analyze(p: Analyze, _: Principal) -> ProjectAnalysis:
        return await registry.analyze_project(path_of(p.path))

    async def diff(p: Diff, _: Principal) -> ProjectDiff:
        return await registry.project_diff(path_of(p.path), p.staged)

    async def devops(p: Devops, _: Principal) -> DevopsApplied:
        return await registry.apply_devops(path_of(p.path), p.type or "", force=p.force, dry_run=p.dry_run)

    return Tool(
        name="jarvis_project",
        description="Project: analyze|diff|devops",
        summary=(
            "A local code project: analyze its languages, frameworks and tooling, show its git diff, scaffold "
            "DevOps configuration (CI workflows, Dockerfile) for it."
        ),
        actions=[
            Action("analyze", analyze, Analyze, read_only=True, idempotent=True),
            Action("diff", diff, Diff, read_only=True, idempotent=True),
            Action("devops", devops, Devops),
        ],
    )
