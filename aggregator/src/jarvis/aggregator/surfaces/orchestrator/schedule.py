"""`schedule`: cron prompts run by the scheduler service, which this deployment does not have yet."""

from __future__ import annotations

from typing import Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.principal import Principal
from jarvis.aggregator.surfaces import schema as s
from jarvis.aggregator.surfaces.base import Action, Tool
from jarvis.common.errors import FailedPrecondition

UNAVAILABLE = ("the scheduler service is not part of this deployment yet, so schedules cannot be stored or run; "
               "nothing was created or changed")


def build(_: ToolContext) -> Tool:
    def refuse(verb: str) -> Any:
        async def handler(a: dict[str, Any], __: Principal) -> Any:
            what = f"schedule '{a['schedule_id']}'" if a.get("schedule_id") else "the schedule"
            raise FailedPrecondition(f"cannot {verb} {what}: {UNAVAILABLE}")
        return handler

    async def list_(_: dict[str, Any], __: Principal) -> Any:
        return {"schedules": [], "count": 0, "note": UNAVAILABLE}

    return Tool(
        name="schedule",
        description="Schedules: create|list|get|update|delete|trigger",
        properties={
            "schedule_id": s.string(),
            "cron": s.string(),
            "prompt": s.string(),
            "targets": s.strings("project ids"),
            "enabled": s.boolean(),
        },
        actions=[
            Action("create", refuse("create"), required=("cron", "prompt", "targets")),
            Action("list", list_, read_only=True, idempotent=True),
            Action("get", refuse("read"), read_only=True, idempotent=True, required=("schedule_id",)),
            Action("update", refuse("update"), idempotent=True, required=("schedule_id",)),
            Action("delete", refuse("delete"), destructive=True, idempotent=True, required=("schedule_id",)),
            Action("trigger", refuse("trigger"), required=("schedule_id",)),
        ],
    )
