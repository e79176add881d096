"""The single-purpose tools: project_options, project_changes, project_tasks, image_rebuild,
caller_tool_response, config_limits."""

from __future__ import annotations

import json
from typing import Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.orchestrator.common import PROJECT_ID, SESSION_ID, WORKSPACE_ID, as_dict, need, runtime
from jarvis.aggregator.tooling import schema as s
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Tool
from jarvis.api.runtime.v1 import runtime_pb2 as pb

BUILD_TIMEOUT = 1900.0  # the runtime's build limit (1800 s) and a margin


def build(ctx: ToolContext) -> list[Tool]:
    async def options(_: dict[str, Any], __: Principal) -> Any:
        rt = runtime(ctx)
        return as_dict(await rt.call(rt.runtime.ProjectOptions, pb.ProjectOptionsRequest()))

    async def changes(a: dict[str, Any], _: Principal) -> Any:
        need(a, "project_id", tool="project_changes")
        rt = runtime(ctx)
        req = pb.ProjectChangesRequest(
            project_id=a["project_id"],
            workspace_id=a.get("workspace_id", ""),
            session_id=a.get("session_id", ""),
            max_bytes=a.get("max_bytes", 0),
        )
        return as_dict(await rt.call(rt.runtime.ProjectChanges, req))

    async def tasks(a: dict[str, Any], _: Principal) -> Any:
        need(a, "project_id", tool="project_tasks")
        rt = runtime(ctx)
        resp = await rt.call(rt.runtime.ProjectTasks, pb.ProjectRef(project_id=a["project_id"]))
        return {"tasks": [as_dict(t) for t in resp.tasks], "run_with": "container action=exec command=<command>"}

    async def rebuild(a: dict[str, Any], _: Principal) -> Any:
        need(a, "project_id", tool="image_rebuild")
        rt = runtime(ctx)
        return as_dict(
            await rt.call(rt.long.RebuildImage, pb.ProjectRef(project_id=a["project_id"]), timeout=BUILD_TIMEOUT)
        )

    async def respond(a: dict[str, Any], _: Principal) -> Any:
        need(a, "project_id", "session_id", "request_id", tool="caller_tool_response")
        rt = runtime(ctx)
        req = pb.RespondToolRequestRequest(
            project_id=a["project_id"],
            session_id=a["session_id"],
            request_id=a["request_id"],
            result_json=json.dumps(a.get("result")),
            is_error=a.get("is_error", False),
        )
        return as_dict(await rt.call(rt.long.RespondToolRequest, req))

    async def limits(_: dict[str, Any], __: Principal) -> Any:
        rt = runtime(ctx)
        return as_dict(await rt.call(rt.runtime.GetLimits, pb.GetLimitsRequest()))

    return [
        Tool(
            name="project_options",
            description="Defaults and choices for new projects",
            handler=options,
            read_only=True,
            idempotent=True,
        ),
        Tool(
            name="project_changes",
            description="git status and diff of a session's workspace",
            properties={
                "project_id": PROJECT_ID,
                "workspace_id": WORKSPACE_ID,
                "session_id": SESSION_ID,
                "max_bytes": s.integer(minimum=1),
            },
            handler=changes,
            read_only=True,
            idempotent=True,
        ),
        Tool(
            name="project_tasks",
            description="Tasks the project declares (make, npm, just…)",
            properties={"project_id": PROJECT_ID},
            handler=tasks,
            read_only=True,
            idempotent=True,
        ),
        Tool(
            name="image_rebuild",
            description="Rebuild the project image from its Dockerfile",
            properties={"project_id": PROJECT_ID},
            handler=rebuild,
            admin=True,
        ),
        Tool(
            name="caller_tool_response",
            description="Answer a session's tool request by request_id",
            properties={
                "project_id": PROJECT_ID,
                "session_id": SESSION_ID,
                "request_id": s.string(),
                "result": {},
                "is_error": s.boolean(),
            },
            handler=respond,
        ),
        Tool(
            name="config_limits",
            description="Limits enforced on containers and sessions",
            handler=limits,
            read_only=True,
            idempotent=True,
        ),
    ]
