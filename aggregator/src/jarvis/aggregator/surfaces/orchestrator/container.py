"""`container`: the project's container: start, stop, logs, exec (inside the container, never on the host)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.orchestrator.common import ProjectScoped, runtime
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.aggregator.views.runtime import ContainerLogs, ContainerView, ExecResult
from jarvis.common.params import Arg


@dataclass(frozen=True)
class Exec:
    project_id: str
    command: Annotated[list[str] | str, Arg("argv list, or a string for sh -c in the container")]
    workspace_id: str = ""
    timeout: Annotated[int, Arg("s", minimum=1)] = 0
    max_output: Annotated[int, Arg("bytes", minimum=1)] = 0


@dataclass(frozen=True)
class Logs:
    project_id: str
    tail: Annotated[int, Arg(minimum=1)] = 0
    since: Annotated[int, Arg("unix s", minimum=0)] = 0


@dataclass(frozen=True)
class Started:
    container: ContainerView


@dataclass(frozen=True)
class ContainerActions:
    ctx: ToolContext

    async def start(self, p: ProjectScoped, _: Principal) -> Started:
        return Started(await runtime(self.ctx).start_container(p.project_id))

    async def stop(self, p: ProjectScoped, _: Principal) -> Started:
        return Started(await runtime(self.ctx).stop_container(p.project_id))

    async def logs(self, p: Logs, _: Principal) -> ContainerLogs:
        return await runtime(self.ctx).container_logs(p.project_id, tail=p.tail, since=p.since)

    async def exec_(self, p: Exec, _: Principal) -> ExecResult:
        return await runtime(self.ctx).exec(
            p.project_id, p.command, workspace_id=p.workspace_id, timeout=p.timeout, max_output=p.max_output
        )


def build(ctx: ToolContext) -> Tool:
    a = ContainerActions(ctx)
    return Tool(
        name="container",
        description="Project container: start|stop|logs|exec",
        actions=[
            Action("start", a.start, ProjectScoped, idempotent=True),
            Action("stop", a.stop, ProjectScoped, destructive=True, idempotent=True),
            Action("logs", a.logs, Logs, read_only=True, idempotent=True),
            Action("exec", a.exec_, Exec, destructive=True),
        ],
    )
