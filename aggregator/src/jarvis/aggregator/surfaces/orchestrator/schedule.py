"""`schedule`: cron prompts the scheduler service runs as agent sessions on its target projects.

Project-bound tokens (`<scope>@<project_id>`) reach a schedule only through its targets: writing
(create, update, delete, trigger) needs the action allowed on every target, and a schedule with a
target the token cannot see is listed nowhere and answered as not found.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.gateways.scheduler import SchedulerGateway
from jarvis.aggregator.surfaces.orchestrator.common import as_dict
from jarvis.aggregator.tooling import schema as s
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.api.scheduler.v1 import scheduler_pb2 as pb
from jarvis.common.errors import FailedPrecondition, InvalidArgument, NotFound, PermissionDenied

NAME = "schedule"
SURFACE = "orchestrator"
NO_SCHEDULER = (
    "the scheduler service is not part of this deployment: run it (`jarvis serve scheduler`) and set "
    "JARVIS_AGGREGATOR_SCHEDULER_TARGET to its host:port; nothing was created or changed"
)
READ_ONLY = ("list", "get")  # as their Actions below say; no action of this tool is admin
# What update may change; everything it is not given stays as it is.
CHANGEABLE = ("name", "cron", "timezone", "prompt", "targets", "enabled", "concurrency", "missed", "secret_overrides")


class ScheduleTool(Tool):
    """A schedule names its projects in `targets`, not `project_id`, so project-bound scopes are checked on those."""

    def permits(self, principal: Principal, surface: str, action: Action | None, args: Mapping[str, Any]) -> bool:
        targets = args.get("targets")
        if (
            action is not None
            and action.name in ("create", "update")
            and isinstance(targets, list)
            and targets
            and all(isinstance(t, str) for t in targets)
        ):
            return all(_may(principal, action.name, t) for t in targets)
        # The schedule's own targets are not known here: the handler checks them once it has the schedule.
        projects: list[str | None] = [None, *principal.bound_projects]
        return action is not None and any(_may(principal, action.name, p) for p in projects)


def build(ctx: ToolContext) -> Tool:
    def scheduler(verb: str, a: dict[str, Any]) -> SchedulerGateway:
        if ctx.scheduler is None:
            what = f"schedule '{a['schedule_id']}'" if a.get("schedule_id") else "the schedule"
            raise FailedPrecondition(f"cannot {verb} {what}: {NO_SCHEDULER}")
        return ctx.scheduler

    async def reachable(sc: SchedulerGateway, schedule_id: str, principal: Principal, action: str) -> None:
        """Raise unless `principal` may do `action` on every target of the schedule."""
        detail = await sc.call(sc.scheduler.GetSchedule, pb.ScheduleRef(schedule_id=schedule_id))
        targets: list[str | None] = [*detail.schedule.targets]
        targets = targets or [None]
        if not all(_may(principal, "get", t) or _may(principal, action, t) for t in targets):
            raise NotFound(f"schedule '{schedule_id}' not found; `schedule action=list` shows the ids")
        denied = [t or "(none)" for t in targets if not _may(principal, action, t)]
        if denied:
            raise PermissionDenied(
                f"your token's scopes do not allow schedule action={action} on project(s) "
                f"{', '.join(denied)}, which this schedule runs on"
            )

    async def create(a: dict[str, Any], principal: Principal) -> Any:
        sc = scheduler("create", a)
        req = pb.CreateScheduleRequest(
            name=a.get("name", ""),
            cron=a["cron"],
            timezone=a.get("timezone", ""),
            prompt=a["prompt"],
            targets=a["targets"],
            concurrency=a.get("concurrency", ""),
            missed=a.get("missed", ""),
            created_by=_creator(principal),
            secret_overrides=a.get("secret_overrides") or {},
        )
        if "enabled" in a:
            req.enabled = a["enabled"]
        return {"created": as_dict(await sc.call(sc.scheduler.CreateSchedule, req))}

    async def list_(a: dict[str, Any], principal: Principal) -> Any:
        sc = scheduler("list", a)
        wanted = set(a.get("targets") or ())
        req = pb.ListSchedulesRequest(target=next(iter(wanted)) if len(wanted) == 1 else "")
        resp = await sc.call(sc.scheduler.ListSchedules, req)
        shown = [
            as_dict(x)
            for x in resp.schedules
            if (not wanted or wanted & set(x.targets)) and _may_all(principal, "list", x.targets)
        ]
        return {"schedules": shown, "count": len(shown)}

    async def get(a: dict[str, Any], principal: Principal) -> Any:
        sc = scheduler("read", a)
        detail = await sc.call(sc.scheduler.GetSchedule, pb.ScheduleRef(schedule_id=a["schedule_id"]))
        if not _may_all(principal, "get", detail.schedule.targets):
            raise NotFound(f"schedule '{a['schedule_id']}' not found; `schedule action=list` shows the ids")
        return as_dict(detail)

    async def update(a: dict[str, Any], principal: Principal) -> Any:
        sc = scheduler("update", a)
        given = [f for f in CHANGEABLE if f in a]
        if not given:
            raise InvalidArgument(f"schedule action=update changes nothing; give any of {', '.join(CHANGEABLE)}")
        await reachable(sc, a["schedule_id"], principal, "update")
        req = pb.UpdateScheduleRequest(schedule_id=a["schedule_id"])
        for field in given:
            if field == "targets":  # replaces the list; an empty one is the scheduler's to refuse
                req.targets.SetInParent()
                req.targets.ids.extend(a["targets"])
            elif field == "secret_overrides":  # replaces the map; an empty one clears it
                req.secret_overrides.SetInParent()
                req.secret_overrides.pairs.update(a["secret_overrides"] or {})
            else:
                setattr(req, field, a[field])
        return {"updated": as_dict(await sc.call(sc.scheduler.UpdateSchedule, req))}

    async def delete(a: dict[str, Any], principal: Principal) -> Any:
        sc = scheduler("delete", a)
        await reachable(sc, a["schedule_id"], principal, "delete")
        return {
            "deleted": as_dict(await sc.call(sc.scheduler.DeleteSchedule, pb.ScheduleRef(schedule_id=a["schedule_id"])))
        }

    async def trigger(a: dict[str, Any], principal: Principal) -> Any:
        sc = scheduler("trigger", a)
        await reachable(sc, a["schedule_id"], principal, "trigger")
        resp = await sc.call(sc.scheduler.TriggerSchedule, pb.ScheduleRef(schedule_id=a["schedule_id"]))
        return {"runs": [as_dict(r) for r in resp.runs], "count": len(resp.runs)}

    return ScheduleTool(
        name=NAME,
        description="Cron prompts: create|list|get|update|delete|trigger",
        properties={
            "schedule_id": s.string(),
            "name": s.string(),
            "cron": s.string("five fields, e.g. '0 3 * * 1-5'"),
            "timezone": s.string("IANA, default UTC"),
            "prompt": s.string(),
            "targets": s.strings("project ids"),
            "enabled": s.boolean(),
            "concurrency": s.string(enum=["skip", "queue"]),
            "missed": s.string(enum=["run_once", "record"]),
            "secret_overrides": s.string_map("env var -> project secret name"),
        },
        actions=[
            Action("create", create, required=("cron", "prompt", "targets")),
            Action("list", list_, read_only=True, idempotent=True),
            Action("get", get, read_only=True, idempotent=True, required=("schedule_id",)),
            Action("update", update, idempotent=True, required=("schedule_id",)),
            Action("delete", delete, destructive=True, idempotent=True, required=("schedule_id",)),
            Action("trigger", trigger, required=("schedule_id",)),
        ],
    )


def _may(principal: Principal, action: str, project: str | None) -> bool:
    return principal.may(SURFACE, NAME, action, read_only=action in READ_ONLY, admin=False, project=project)


def _may_all(principal: Principal, action: str, targets: Iterable[str]) -> bool:
    """Whether `action` is allowed on every target; a schedule naming none is for unbound scopes only."""
    named: list[str | None] = [*targets]
    return all(_may(principal, action, t) for t in (named or [None]))


def _creator(principal: Principal) -> str:
    return f"{principal.name} ({principal.token_id})" if principal.token_id else principal.name
