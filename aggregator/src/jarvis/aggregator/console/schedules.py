"""My schedules (issue 49): the cron prompts a person may see, with their next fires and last runs, to enable,
disable or trigger now. Each is the orchestrator's `schedule` tool called as the person (list, get, update, trigger),
so a schedule bound to a project the person's scopes do not reach is shown nowhere and changed by no form.
"""

from __future__ import annotations

from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from jarvis.aggregator.console.calls import Answer
from jarvis.aggregator.console.web import PATH, Act, ConsoleBase, field
from jarvis.aggregator.tooling.principal import Principal

SCHEDULES = f"{PATH}/schedules"
SHOWN_SCHEDULES = 50  # each shown schedule costs a `get` (its next fires and runs): a page shows this many
SHOWN_RUNS = 5  # the newest runs of each


def _switch(enabled: bool) -> Act:
    """Enable or disable: `schedule action=update enabled=…`, the call `jarvis schedule update` makes."""
    word = "enabled" if enabled else "disabled"
    return Act(
        "schedule",
        lambda form: {"action": "update", "schedule_id": field(form, "schedule_id"), "enabled": enabled},
        lambda answer, form: f"Schedule {_name(answer, 'updated', form)} is {word}.",
    )


def _triggered(answer: Answer, form: FormData) -> str:
    count = int((answer.payload or {}).get("count") or 0)
    return f"Schedule {field(form, 'schedule_id')} triggered: {count} run{'s' if count != 1 else ''} queued."


def _name(answer: Answer, key: str, form: FormData) -> str:
    schedule = ((answer.payload or {}).get(key) or {}).get("schedule") or {}
    return str(schedule.get("name") or field(form, "schedule_id"))


ENABLE, DISABLE = _switch(True), _switch(False)
TRIGGER = Act("schedule", lambda form: {"action": "trigger", "schedule_id": field(form, "schedule_id")}, _triggered)


class SchedulePages(ConsoleBase):
    def schedule_routes(self) -> list[Route]:
        return [
            Route(SCHEDULES, self.schedules_page, methods=["GET"]),
            Route(f"{SCHEDULES}/enable", self.enable_schedule, methods=["POST"]),
            Route(f"{SCHEDULES}/disable", self.disable_schedule, methods=["POST"]),
            Route(f"{SCHEDULES}/trigger", self.trigger_schedule, methods=["POST"]),
        ]

    async def _schedules(self, principal: Principal, note: str = "") -> dict[str, Any]:
        """Each schedule the person may list, with what `get` adds: its next fires and newest runs."""
        listed = await self._ask(principal, "schedule", {"action": "list"})
        shown = []
        for schedule in (listed.payload.get("schedules", []) if listed.ok else [])[:SHOWN_SCHEDULES]:
            got = await self.calls.call(principal, "schedule", {"action": "get", "schedule_id": schedule["id"]})
            detail = got.payload if got.ok else {}
            runs = sorted(detail.get("recent_runs", []), key=_run_time, reverse=True)[:SHOWN_RUNS]
            shown.append({**schedule, "next_fires": detail.get("next_fires", []), "runs": runs, "error": got.error})
        return {
            "schedules": shown,
            "count": listed.payload.get("count", 0) if listed.ok else 0,
            "error": listed.error,
            "note": note,
            "may_update": self.calls.may(principal, "schedule", "update"),
            "may_trigger": self.calls.may(principal, "schedule", "trigger"),
        }

    async def schedules_page(self, request: Request) -> Response:
        who = await self._who(request)
        if isinstance(who, Response):
            return who
        if not self.calls.may(who[1], "schedule", "list"):
            why = "Your scopes do not allow the orchestrator's schedule action=list."
            return self._page(request, "refused.html", {"why": why}, status=403, who=who)
        values = await self._schedules(who[1])
        return self._page(request, "schedules.html", values, status=400 if values["error"] else 200, who=who)

    async def enable_schedule(self, request: Request) -> Response:
        return await self._act(request, ENABLE, self._schedules, "schedules.html")

    async def disable_schedule(self, request: Request) -> Response:
        return await self._act(request, DISABLE, self._schedules, "schedules.html")

    async def trigger_schedule(self, request: Request) -> Response:
        return await self._act(request, TRIGGER, self._schedules, "schedules.html")


def _run_time(run: dict[str, Any]) -> str:
    """When a run happened, for ordering: RFC 3339 strings of one zone sort as times."""
    return str(run.get("queued_at") or run.get("tick") or run.get("started_at") or "")
