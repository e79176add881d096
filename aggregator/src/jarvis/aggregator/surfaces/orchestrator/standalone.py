"""The single-purpose tools: project_options, project_changes, project_tasks, image_rebuild,
caller_tool_response, config_limits."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.orchestrator.common import ProjectScoped, runtime
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Handler, Tool
from jarvis.aggregator.views.runtime import (
    ImageRebuilt,
    LimitsView,
    ProjectChanges,
    ProjectOptions,
    ProjectTaskView,
    ToolResponseDelivered,
)
from jarvis.common.params import Arg, NoParams

RUN_WITH = "container action=exec command=<command>"


@dataclass(frozen=True)
class Changes:
    project_id: str
    workspace_id: str = ""
    session_id: str = ""
    max_bytes: Annotated[int, Arg(minimum=1)] = 0


@dataclass(frozen=True)
class Respond:
    project_id: str
    session_id: str
    request_id: str
    result: Any = None  # the caller's own JSON, handed to the agent as is
    is_error: bool = False


@dataclass(frozen=True)
class ProjectTasks:
    tasks: list[ProjectTaskView]
    run_with: str


@dataclass(frozen=True)
class Standalone:
    ctx: ToolContext

    async def options(self, _: NoParams, __: Principal) -> ProjectOptions:
        return await runtime(self.ctx).project_options()

    async def changes(self, p: Changes, _: Principal) -> ProjectChanges:
        rt = runtime(self.ctx)
        return await rt.project_changes(
            p.project_id, workspace_id=p.workspace_id, session_id=p.session_id, max_bytes=p.max_bytes
        )

    async def tasks(self, p: ProjectScoped, _: Principal) -> ProjectTasks:
        return ProjectTasks(await runtime(self.ctx).project_tasks(p.project_id), RUN_WITH)

    async def rebuild(self, p: ProjectScoped, _: Principal) -> ImageRebuilt:
        return await runtime(self.ctx).rebuild_image(p.project_id)

    async def respond(self, p: Respond, _: Principal) -> ToolResponseDelivered:
        rt = runtime(self.ctx)
        return await rt.respond_tool_request(
            p.project_id, p.session_id, p.request_id, result_json=json.dumps(p.result), is_error=p.is_error
        )

    async def limits(self, _: NoParams, __: Principal) -> LimitsView:
        return await runtime(self.ctx).get_limits()


def _reader(name: str, description: str, handler: Handler[Any], params: type[Any]) -> Tool:
    return Tool(name, description, handler=handler, params=params, read_only=True, idempotent=True)


def build(ctx: ToolContext) -> list[Tool]:
    t = Standalone(ctx)
    return [
        _reader("project_options", "Defaults and choices for new projects", t.options, NoParams),
        _reader("project_changes", "git status and diff of a session's workspace", t.changes, Changes),
        _reader("project_tasks", "Tasks the project declares (make, npm, just…)", t.tasks, ProjectScoped),
        Tool(
            "image_rebuild",
            "Rebuild the project image from its Dockerfile",
            handler=t.rebuild,
            params=ProjectScoped,
            admin=True,
        ),
        Tool(
            "caller_tool_response", "Answer a session's tool request by request_id", handler=t.respond, params=Respond
        ),
        _reader("config_limits", "Limits enforced on containers and sessions", t.limits, NoParams),
    ]
