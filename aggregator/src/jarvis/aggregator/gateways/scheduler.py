"""The aggregator's client of the scheduler service: deadlines, retries for idempotent calls, domain errors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from jarvis.aggregator.gateways.client import ServiceClient
from jarvis.aggregator.gateways.registry_convert import timestamp
from jarvis.aggregator.views.scheduler import RunView, ScheduleDeleted, ScheduleDetail, SchedulerStatus, ScheduleView
from jarvis.api.scheduler.v1 import scheduler_pb2 as pb
from jarvis.api.scheduler.v1 import scheduler_pb2_grpc
from jarvis.common.internal_plane import InternalPlane

SCHEDULER_SERVICE = "jarvis.api.scheduler.v1.SchedulerService"

# Reads, deletes and whole-or-nothing updates may be replayed when the scheduler restarts; a replayed
# create would make a second schedule and a replayed trigger a second set of runs, so those never are.
IDEMPOTENT = {
    SCHEDULER_SERVICE: [
        "ListSchedules",
        "GetSchedule",
        "ListRuns",
        "GetStatus",
        "DeleteSchedule",
        "UpdateSchedule",
    ],
}


@dataclass(frozen=True)
class ScheduleChanges:
    """What an update changes; None leaves a field as it is. `targets` and `secret_overrides` replace the whole
    list or map (an empty map clears it; an empty target list is the scheduler's to refuse)."""

    name: str | None = None
    cron: str | None = None
    timezone: str | None = None
    prompt: str | None = None
    targets: list[str] | None = None
    enabled: bool | None = None
    concurrency: str | None = None
    missed: str | None = None
    secret_overrides: Mapping[str, str] | None = None
    paused_reason: str | None = None  # with enabled=False: why Jarvis disabled it (its owner was disabled)


class SchedulerGateway(ServiceClient):
    """Calls the scheduler; its errors come back as the domain errors they stand for."""

    service = "scheduler"
    # A trigger checks its target projects with the runtime; GetStatus pings the Celery workers.
    slow: ClassVar[dict[str, float]] = {
        "TriggerSchedule": 30.0,
        "CreateSchedule": 15.0,
        "UpdateSchedule": 15.0,
        "GetStatus": 10.0,
    }

    def __init__(self, target: str, plane: InternalPlane | None = None) -> None:
        super().__init__(target, IDEMPOTENT, plane)
        self._scheduler = scheduler_pb2_grpc.SchedulerServiceStub(self._channel)

    async def create_schedule(
        self,
        *,
        name: str,
        cron: str,
        timezone: str,
        prompt: str,
        targets: list[str],
        enabled: bool | None,
        concurrency: str,
        missed: str,
        created_by: str,
        secret_overrides: Mapping[str, str],
    ) -> ScheduleDetail:
        """A new schedule; `enabled` None is the scheduler's default (enabled)."""
        request = pb.CreateScheduleRequest(
            name=name,
            cron=cron,
            timezone=timezone,
            prompt=prompt,
            targets=targets,
            enabled=enabled,
            concurrency=concurrency,
            missed=missed,
            created_by=created_by,
            secret_overrides=secret_overrides,
        )
        return detail_view(await self._call(self._scheduler.CreateSchedule, request))

    async def list_schedules(self, target: str = "") -> list[ScheduleView]:
        response = await self._call(self._scheduler.ListSchedules, pb.ListSchedulesRequest(target=target))
        return [schedule_view(s) for s in response.schedules]

    async def get_schedule(self, schedule_id: str) -> ScheduleDetail:
        return detail_view(await self._call(self._scheduler.GetSchedule, pb.ScheduleRef(schedule_id=schedule_id)))

    async def update_schedule(self, schedule_id: str, changes: ScheduleChanges) -> ScheduleDetail:
        request = pb.UpdateScheduleRequest(
            schedule_id=schedule_id,
            name=changes.name,
            cron=changes.cron,
            timezone=changes.timezone,
            prompt=changes.prompt,
            enabled=changes.enabled,
            concurrency=changes.concurrency,
            missed=changes.missed,
            paused_reason=changes.paused_reason,
        )
        if changes.targets is not None:
            request.targets.SetInParent()
            request.targets.ids.extend(changes.targets)
        if changes.secret_overrides is not None:
            request.secret_overrides.SetInParent()
            request.secret_overrides.pairs.update(changes.secret_overrides)
        return detail_view(await self._call(self._scheduler.UpdateSchedule, request))

    async def delete_schedule(self, schedule_id: str) -> ScheduleDeleted:
        r = await self._call(self._scheduler.DeleteSchedule, pb.ScheduleRef(schedule_id=schedule_id))
        return ScheduleDeleted(schedule_id=r.schedule_id, queued_runs_skipped=r.queued_runs_skipped)

    async def trigger_schedule(self, schedule_id: str) -> list[RunView]:
        response = await self._call(self._scheduler.TriggerSchedule, pb.ScheduleRef(schedule_id=schedule_id))
        return [run_view(r) for r in response.runs]

    async def get_status(self, timeout: float | None = None) -> SchedulerStatus:
        r = await self._call(self._scheduler.GetStatus, pb.GetStatusRequest(), timeout=timeout)
        return SchedulerStatus(
            mode=r.mode,
            schedules=r.schedules,
            enabled=r.enabled,
            runs_by_state=dict(r.runs_by_state),
            queue_depth=r.queue_depth,
            detail=r.detail,
            workers=r.workers,
            workers_detail=r.workers_detail,
        )


def schedule_view(s: pb.Schedule) -> ScheduleView:
    return ScheduleView(
        id=s.id,
        name=s.name,
        cron=s.cron,
        timezone=s.timezone,
        prompt=s.prompt,
        targets=list(s.targets),
        enabled=s.enabled,
        concurrency=s.concurrency,
        missed=s.missed,
        created_by=s.created_by,
        created_at=timestamp(s, "created_at"),
        updated_at=timestamp(s, "updated_at"),
        next_fire_at=timestamp(s, "next_fire_at"),
        last_fired_at=timestamp(s, "last_fired_at"),
        secret_overrides=dict(s.secret_overrides),
        paused_reason=s.paused_reason,
    )


def run_view(r: pb.Run) -> RunView:
    return RunView(
        id=r.id,
        schedule_id=r.schedule_id,
        target=r.target,
        tick=timestamp(r, "tick"),
        trigger=r.trigger,
        state=r.state,
        idempotency_key=r.idempotency_key,
        session_id=r.session_id,
        attempts=r.attempts,
        error=r.error,
        missed_ticks=r.missed_ticks,
        first_missed_tick=timestamp(r, "first_missed_tick"),
        queued_at=timestamp(r, "queued_at"),
        started_at=timestamp(r, "started_at"),
        session_started_at=timestamp(r, "session_started_at"),
        finished_at=timestamp(r, "finished_at"),
    )


def detail_view(d: pb.ScheduleDetail) -> ScheduleDetail:
    return ScheduleDetail(
        schedule=schedule_view(d.schedule) if d.HasField("schedule") else None,
        next_fires=[t.ToJsonString() for t in d.next_fires],
        recent_runs=[run_view(r) for r in d.recent_runs],
    )
