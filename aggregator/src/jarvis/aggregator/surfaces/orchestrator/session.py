"""`session`: agent sessions in the project's container: spawn, message, get, list, end, events, cleanup."""

from __future__ import annotations

from typing import Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.orchestrator.common import (
    PROJECT_ID,
    SESSION_ID,
    WORKSPACE_ID,
    as_dict,
    event_dict,
    runtime,
)
from jarvis.aggregator.tooling import schema as s
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.api.runtime.v1 import runtime_pb2 as pb

SPAWN_TIMEOUT = 180.0  # may start the container and check out a worktree first
END_TIMEOUT = 120.0


def build(ctx: ToolContext) -> Tool:
    async def spawn(a: dict[str, Any], _: Principal) -> Any:
        rt = runtime(ctx)
        req = pb.SpawnSessionRequest(
            project_id=a["project_id"],
            workspace_id=a.get("workspace_id", ""),
            prompt=a.get("prompt", ""),
            agent=a.get("agent", ""),
        )
        return {"session": as_dict(await rt.call(rt.long.SpawnSession, req, timeout=SPAWN_TIMEOUT))}

    async def message(a: dict[str, Any], _: Principal) -> Any:
        rt = runtime(ctx)
        req = pb.MessageSessionRequest(
            project_id=a["project_id"],
            workspace_id=a.get("workspace_id", ""),
            session_id=a.get("session_id", ""),
            message=a["message"],
        )
        return {"session": as_dict(await rt.call(rt.long.MessageSession, req))}

    async def get(a: dict[str, Any], _: Principal) -> Any:
        rt = runtime(ctx)
        ref = pb.SessionRef(project_id=a["project_id"], session_id=a["session_id"])
        return as_dict(await rt.call(rt.runtime.GetSession, ref))

    async def list_(a: dict[str, Any], _: Principal) -> Any:
        rt = runtime(ctx)
        resp = await rt.call(rt.runtime.ListSessions, pb.ProjectRef(project_id=a["project_id"]))
        return {"sessions": [as_dict(x) for x in resp.sessions], "count": len(resp.sessions)}

    async def end(a: dict[str, Any], _: Principal) -> Any:
        rt = runtime(ctx)
        ref = pb.SessionRef(project_id=a["project_id"], session_id=a["session_id"], force=a.get("force", False))
        return {"session": as_dict(await rt.call(rt.long.EndSession, ref, timeout=END_TIMEOUT))}

    async def events(a: dict[str, Any], _: Principal) -> Any:
        rt = runtime(ctx)
        wait = float(a.get("wait", 0))
        req = pb.SessionEventsRequest(
            project_id=a["project_id"],
            session_id=a["session_id"],
            after=a.get("after", 0),
            limit=a.get("limit", 0),
            wait_seconds=wait,
        )
        resp = await rt.call(rt.long.SessionEvents, req, timeout=wait + 30)
        return {"events": [event_dict(e) for e in resp.events], "next_cursor": resp.next_cursor, "state": resp.state}

    async def cleanup(a: dict[str, Any], _: Principal) -> Any:
        rt = runtime(ctx)
        req = pb.CleanupSessionsRequest(project_id=a["project_id"], older_than_seconds=a.get("older_than", 0))
        return as_dict(await rt.call(rt.long.CleanupSessions, req, timeout=END_TIMEOUT))

    return Tool(
        name="session",
        description="Agent sessions: spawn|message|get|list|end|events|cleanup",
        properties={
            "project_id": PROJECT_ID,
            "session_id": SESSION_ID,
            "workspace_id": WORKSPACE_ID,
            "prompt": s.string(),
            "agent": s.string(),
            "message": s.string(),
            "after": s.integer("event cursor", minimum=0),
            "limit": s.integer(minimum=1),
            "wait": {"type": "number", "minimum": 0, "maximum": 20, "description": "s to wait for events"},
            "force": s.boolean(),
            "older_than": s.integer("s", minimum=0),
        },
        actions=[
            Action("spawn", spawn, required=("project_id",)),
            Action("message", message, required=("project_id", "message")),
            Action("get", get, read_only=True, idempotent=True, required=("project_id", "session_id")),
            Action("list", list_, read_only=True, idempotent=True, required=("project_id",)),
            Action("end", end, destructive=True, idempotent=True, required=("project_id", "session_id")),
            Action("events", events, read_only=True, idempotent=True, required=("project_id", "session_id")),
            Action("cleanup", cleanup, destructive=True, required=("project_id",)),
        ],
    )
