"""`schedule`: cron prompts the scheduler service runs as agent sessions on its target projects.

Project-bound tokens (`<scope>@<project_id>`) reach a schedule only through its targets: writing
(create, update, delete, trigger) needs the action allowed on every target, and a schedule with a
target the token cannot see is listed nowhere and answered as not found.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Annotated, Any, Literal

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.gateways.protocols import SchedulerApi
from jarvis.aggregator.gateways.scheduler import ScheduleChanges
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.aggregator.views.scheduler import RunView, ScheduleDeleted, ScheduleDetail, ScheduleView
from jarvis.common.errors import FailedPrecondition, InvalidArgument, NotFound, PermissionDenied
from jarvis.common.params import Arg

NAME = "schedule"
SURFACE = "orchestrator"
NO_SCHEDULER = (
    "the scheduler service is not part of this deployment: run it (`jarvis serve scheduler`) and set "
    "JARVIS_AGGREGATOR_SCHEDULER_TARGET to its host:port; nothing was created or changed"
)
READ_ONLY = ("list", "get")  # as their Actions below say; no action of this tool is admin
# What an agent's credential (decision 0058) may do to schedules only where its person's role names this tool: each run
# of a schedule acts for its owner, so a schedule an agent made or changed would go on acting for the person after
# the session, and the credential that is good only while it runs, have ended (issue 44, finding 12).
AGENT_NEEDS_ROLE = ("create", "update", "trigger")

# A parameter two actions share must read the same in both; `Annotated` must be outermost to be seen.
CRON = Arg("five fields, e.g. '0 3 * * 1-5'")
TIMEZONE = Arg("IANA, default UTC")
TARGETS = Arg("project ids")
OVERRIDES = Arg("env var -> project secret name")
Concurrency = Literal["skip", "queue"]
Missed = Literal["run_once", "record"]


@dataclass(frozen=True)
class Create:
    cron: Annotated[str, CRON]
    prompt: str
    targets: Annotated[list[str], TARGETS]
    name: str = ""
    timezone: Annotated[str, TIMEZONE] = ""
    enabled: bool | None = None
    concurrency: Concurrency | None = None
    missed: Missed | None = None
    secret_overrides: Annotated[dict[str, str] | None, OVERRIDES] = None


@dataclass(frozen=True)
class ListSchedules:
    targets: Annotated[list[str] | None, TARGETS] = None


@dataclass(frozen=True)
class ScheduleRef:
    schedule_id: str


@dataclass(frozen=True)
class Update:
    """What update may change; everything it is not given stays as it is."""

    schedule_id: str
    name: str | None = None
    cron: Annotated[str | None, CRON] = None
    timezone: Annotated[str | None, TIMEZONE] = None
    prompt: str | None = None
    targets: Annotated[list[str] | None, TARGETS] = None
    enabled: bool | None = None
    concurrency: Concurrency | None = None
    missed: Missed | None = None
    secret_overrides: Annotated[dict[str, str] | None, OVERRIDES] = None


CHANGEABLE = tuple(f.name for f in fields(Update) if f.name != "schedule_id")


@dataclass(frozen=True)
class Created:
    created: ScheduleDetail


@dataclass(frozen=True)
class ScheduleList:
    schedules: list[ScheduleView]
    count: int


@dataclass(frozen=True)
class Updated:
    updated: ScheduleDetail


@dataclass(frozen=True)
class Deleted:
    deleted: ScheduleDeleted


@dataclass(frozen=True)
class Triggered:
    runs: list[RunView]
    count: int


class ScheduleTool(Tool):
    """A schedule names its projects in `targets`, not `project_id`, so project-bound scopes are checked on those."""

    def permits(self, principal: Principal, surface: str, action: Action[Any] | None, args: Mapping[str, Any]) -> bool:
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


@dataclass(frozen=True)
class ScheduleActions:
    ctx: ToolContext

    def scheduler(self, verb: str, schedule_id: str = "") -> SchedulerApi:
        if self.ctx.scheduler is None:
            what = f"schedule '{schedule_id}'" if schedule_id else "the schedule"
            raise FailedPrecondition(f"cannot {verb} {what}: {NO_SCHEDULER}")
        return self.ctx.scheduler

    async def reachable(self, sc: SchedulerApi, schedule_id: str, principal: Principal, action: str) -> None:
        """Raise unless `principal` may do `action` on every target of the schedule."""
        detail = await sc.get_schedule(schedule_id)
        targets: list[str | None] = [*detail.schedule.targets] if detail.schedule else []
        targets = targets or [None]
        if not all(_may(principal, "get", t) or _may(principal, action, t) for t in targets):
            raise NotFound(f"schedule '{schedule_id}' not found; `schedule action=list` shows the ids")
        denied = [t or "(none)" for t in targets if not _may(principal, action, t)]
        if denied:
            raise PermissionDenied(
                f"your token's scopes do not allow schedule action={action} on project(s) "
                f"{', '.join(denied)}, which this schedule runs on"
            )

    async def create(self, p: Create, principal: Principal) -> Created:
        await _agent_allowed(self.ctx, principal, "create")
        created = await self.scheduler("create").create_schedule(
            name=p.name,
            cron=p.cron,
            timezone=p.timezone,
            prompt=p.prompt,
            targets=p.targets,
            enabled=p.enabled,
            concurrency=p.concurrency or "",
            missed=p.missed or "",
            created_by=_creator(principal),
            secret_overrides=p.secret_overrides or {},
        )
        return Created(created)

    async def list_(self, p: ListSchedules, principal: Principal) -> ScheduleList:
        wanted = set(p.targets or ())
        listed = await self.scheduler("list").list_schedules(next(iter(wanted)) if len(wanted) == 1 else "")
        shown = [
            x for x in listed if (not wanted or wanted & set(x.targets)) and _may_all(principal, "list", x.targets)
        ]
        return ScheduleList(shown, len(shown))

    async def get(self, p: ScheduleRef, principal: Principal) -> ScheduleDetail:
        detail = await self.scheduler("read", p.schedule_id).get_schedule(p.schedule_id)
        if not _may_all(principal, "get", detail.schedule.targets if detail.schedule else []):
            raise NotFound(f"schedule '{p.schedule_id}' not found; `schedule action=list` shows the ids")
        return detail

    async def update(self, p: Update, principal: Principal) -> Updated:
        sc = self.scheduler("update", p.schedule_id)
        changes = ScheduleChanges(**{f: getattr(p, f) for f in CHANGEABLE})
        if changes == ScheduleChanges():
            raise InvalidArgument(f"schedule action=update changes nothing; give any of {', '.join(CHANGEABLE)}")
        await _agent_allowed(self.ctx, principal, "update")
        await self.reachable(sc, p.schedule_id, principal, "update")
        return Updated(await sc.update_schedule(p.schedule_id, changes))

    async def delete(self, p: ScheduleRef, principal: Principal) -> Deleted:
        sc = self.scheduler("delete", p.schedule_id)
        await self.reachable(sc, p.schedule_id, principal, "delete")
        return Deleted(await sc.delete_schedule(p.schedule_id))

    async def trigger(self, p: ScheduleRef, principal: Principal) -> Triggered:
        sc = self.scheduler("trigger", p.schedule_id)
        await _agent_allowed(self.ctx, principal, "trigger")
        await self.reachable(sc, p.schedule_id, principal, "trigger")
        runs = await sc.trigger_schedule(p.schedule_id)
        return Triggered(runs, len(runs))


def build(ctx: ToolContext) -> Tool:
    a = ScheduleActions(ctx)
    return ScheduleTool(
        name=NAME,
        description="Cron prompts: create|list|get|update|delete|trigger",
        summary=(
            "Scheduled prompts: create a cron schedule that sends a prompt to an agent session, list, get, update, "
            "delete, trigger a run now."
        ),
        actions=[
            Action("create", a.create, Create),
            Action("list", a.list_, ListSchedules, read_only=True, idempotent=True),
            Action("get", a.get, ScheduleRef, read_only=True, idempotent=True),
            Action("update", a.update, Update, idempotent=True),
            Action("delete", a.delete, ScheduleRef, destructive=True, idempotent=True),
            Action("trigger", a.trigger, ScheduleRef),
        ],
    )


def _may(principal: Principal, action: str, project: str | None) -> bool:
    return principal.may(SURFACE, NAME, action, read_only=action in READ_ONLY, admin=False, project=project)


def _may_all(principal: Principal, action: str, targets: Iterable[str]) -> bool:
    """Whether `action` is allowed on every target; a schedule naming none is for unbound scopes only."""
    named: list[str | None] = [*targets]
    return all(_may(principal, action, t) for t in (named or [None]))


async def _agent_allowed(ctx: ToolContext, principal: Principal, action: str) -> None:
    """Raise unless `principal` is no agent, or its person's role names this tool (`orchestrator:schedule…`) in a
    scope that allows `action`: a surface-wide `orchestrator` does not. The role is read as it stands now, since a
    token's scopes fold a role's narrower scopes into its wider ones."""
    if not principal.agent_session or action not in AGENT_NEEDS_ROLE:
        return
    granted = await ctx.people.role_scopes(principal.user) if ctx.people is not None and principal.user else ()
    naming = tuple(s for s in granted if s.partition("@")[0].split(":")[:2] == [SURFACE, NAME])
    if not any(_may(replace(principal, scopes=naming), action, t) for t in [None, *principal.bound_projects]):
        raise PermissionDenied(
            f"an agent may not {action} schedules: a schedule acts for its owner after the agent's session has ended. "
            f"Do it yourself, or ask an admin to give your role the scope '{SURFACE}:{NAME}' (or "
            f"'{SURFACE}:{NAME}:{action}') so your agents may"
        )


def _creator(principal: Principal) -> str:
    return f"{principal.name} ({principal.token_id})" if principal.token_id else principal.name
