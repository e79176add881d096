"""`container`: the project's container: start, stop, logs, exec (inside the container, never on the host)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.orchestrator.common import ProjectScoped, runtime
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.aggregator.views.runtime import ContainerLogs, ContainerView, ExecResult
from jarvis.common import scopes as scope_rules
from jarvis.common.errors import PermissionDenied
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

    async def exec_(self, p: Exec, principal: Principal) -> ExecResult:
        # A command in the container runs as the agent's user, so it can read a running agent's environment, secrets
        # included (/proc/<pid>/environ): exec needs what the project's secrets need. Not as a read: `read` lists
        # secrets' names, while exec would show their values, which no scope reads.
        if not principal.may(*SECRETS, read_only=False, admin=False, project=p.project_id):
            needed = scope_rules.granting(*SECRETS, read_only=False, project=p.project_id)
            raise PermissionDenied(
                "container exec can read the project's secrets (a running agent's environment), so the token needs "
                f"the scope of the project's secrets too, one of: {', '.join(needed)}"
            )
        return await runtime(self.ctx).exec(
            p.project_id, p.command, workspace_id=p.workspace_id, timeout=p.timeout, max_output=p.max_output
        )


# What exec needs besides its own scope: the scope of the project's secrets (`project secret_list`), as a write.
SECRETS = ("orchestrator", "project", "secret_list")


def build(ctx: ToolContext) -> Tool:
    a = ContainerActions(ctx)
    return Tool(
        name="container",
        description="Project container: start|stop|logs|exec",
        summary="A project's container: start it, stop it, read its logs, run a command inside it.",
        actions=[
            Action("start", a.start, ProjectScoped, idempotent=True),
            Action("stop", a.stop, ProjectScoped, destructive=True, idempotent=True),
            Action("logs", a.logs, Logs, read_only=True, idempotent=True),
            Action("exec", a.exec_, Exec, destructive=True),
        ],
    )
