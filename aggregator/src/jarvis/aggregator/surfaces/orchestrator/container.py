"""`container`: the project's container: start, stop, logs, exec (inside the container, never on the host)."""

from __future__ import annotations

from typing import Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.orchestrator.common import PROJECT_ID, WORKSPACE_ID, as_dict, runtime
from jarvis.aggregator.tooling import schema as s
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.api.runtime.v1 import runtime_pb2 as pb

EXEC_TIMEOUT_MARGIN = 30.0  # on top of the command's own limit: killing it and reading its exit code
DEFAULT_EXEC_DEADLINE = 1830.0  # the runtime's longest exec (1800 s) plus the margin


def build(ctx: ToolContext) -> Tool:
    async def start(a: dict[str, Any], _: Principal) -> Any:
        rt = runtime(ctx)
        return {
            "container": as_dict(
                await rt.call(rt.long.StartContainer, pb.ProjectRef(project_id=a["project_id"]), timeout=120)
            )
        }

    async def stop(a: dict[str, Any], _: Principal) -> Any:
        rt = runtime(ctx)
        return {
            "container": as_dict(
                await rt.call(rt.long.StopContainer, pb.ProjectRef(project_id=a["project_id"]), timeout=120)
            )
        }

    async def logs(a: dict[str, Any], _: Principal) -> Any:
        rt = runtime(ctx)
        req = pb.ContainerLogsRequest(project_id=a["project_id"], tail=a.get("tail", 0), since=a.get("since", 0))
        return as_dict(await rt.call(rt.runtime.ContainerLogs, req))

    async def exec_(a: dict[str, Any], _: Principal) -> Any:
        rt = runtime(ctx)
        command = a.get("command", "")
        argv = command if isinstance(command, list) else []
        req = pb.ExecRequest(
            project_id=a["project_id"],
            argv=argv,
            command="" if argv else command,
            workspace_id=a.get("workspace_id", ""),
            timeout_seconds=a.get("timeout", 0),
            max_output_bytes=a.get("max_output", 0),
        )
        deadline = a["timeout"] + EXEC_TIMEOUT_MARGIN if a.get("timeout") else DEFAULT_EXEC_DEADLINE
        return as_dict(await rt.call(rt.long.Exec, req, timeout=deadline))

    return Tool(
        name="container",
        description="Project container: start|stop|logs|exec",
        properties={
            "project_id": PROJECT_ID,
            "command": {
                "type": ["array", "string"],
                "items": {"type": "string"},
                "description": "argv list, or a string for sh -c in the container",
            },
            "workspace_id": WORKSPACE_ID,
            "timeout": s.integer("s", minimum=1),
            "max_output": s.integer("bytes", minimum=1),
            "tail": s.integer(minimum=1),
            "since": s.integer("unix s", minimum=0),
        },
        actions=[
            Action("start", start, idempotent=True, required=("project_id",)),
            Action("stop", stop, destructive=True, idempotent=True, required=("project_id",)),
            Action("logs", logs, read_only=True, idempotent=True, required=("project_id",)),
            Action("exec", exec_, destructive=True, required=("project_id", "command")),
        ],
    )
