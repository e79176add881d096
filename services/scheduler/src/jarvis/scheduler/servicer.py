"""SchedulerService over gRPC: unpack the request, call the domain, pack the answer. Nothing else."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

import grpc

from jarvis.api.scheduler.v1 import scheduler_pb2 as pb
from jarvis.api.scheduler.v1 import scheduler_pb2_grpc as pb_grpc
from jarvis.scheduler import convert
from jarvis.scheduler.domain.models import NewSchedule, ScheduleChanges
from jarvis.scheduler.domain.schedules import Schedules

Ctx: TypeAlias = grpc.ServicerContext


class SchedulerServicer(pb_grpc.SchedulerServiceServicer):
    """Domain errors propagate; the server's interceptor maps them to status codes in one place."""

    def __init__(
        self, schedules: Schedules, mode: str, ping_workers: Callable[[], tuple[int, str]] | None = None
    ) -> None:
        self._schedules = schedules
        self._mode = mode
        self._ping_workers = ping_workers  # Celery mode only: embedded runs need no workers

    def CreateSchedule(self, request: pb.CreateScheduleRequest, context: Ctx) -> pb.ScheduleDetail:
        new = NewSchedule(
            cron=request.cron,
            prompt=request.prompt,
            targets=list(request.targets),
            name=request.name,
            timezone=request.timezone,
            enabled=request.enabled if request.HasField("enabled") else True,
            concurrency=request.concurrency,
            missed=request.missed,
            created_by=request.created_by,
            secret_overrides=dict(request.secret_overrides),
        )
        return convert.detail_to_pb(self._schedules.create(new))

    def ListSchedules(self, request: pb.ListSchedulesRequest, context: Ctx) -> pb.ListSchedulesResponse:
        return pb.ListSchedulesResponse(
            schedules=[convert.schedule_to_pb(s) for s in self._schedules.all(request.target)]
        )

    def GetSchedule(self, request: pb.ScheduleRef, context: Ctx) -> pb.ScheduleDetail:
        return convert.detail_to_pb(self._schedules.get(request.schedule_id))

    def UpdateSchedule(self, request: pb.UpdateScheduleRequest, context: Ctx) -> pb.ScheduleDetail:
        def optional(name: str) -> str | None:
            return getattr(request, name) if request.HasField(name) else None  # type: ignore[arg-type]

        changes = ScheduleChanges(
            name=optional("name"),
            cron=optional("cron"),
            timezone=optional("timezone"),
            prompt=optional("prompt"),
            targets=list(request.targets.ids) if request.HasField("targets") else None,
            enabled=request.enabled if request.HasField("enabled") else None,
            concurrency=optional("concurrency"),
            missed=optional("missed"),
            secret_overrides=dict(request.secret_overrides.pairs) if request.HasField("secret_overrides") else None,
            paused_reason=optional("paused_reason"),
        )
        return convert.detail_to_pb(self._schedules.update(request.schedule_id, changes))

    def DeleteSchedule(self, request: pb.ScheduleRef, context: Ctx) -> pb.DeleteScheduleResponse:
        skipped = self._schedules.delete(request.schedule_id)
        return pb.DeleteScheduleResponse(schedule_id=request.schedule_id, queued_runs_skipped=skipped)

    def TriggerSchedule(self, request: pb.ScheduleRef, context: Ctx) -> pb.TriggerScheduleResponse:
        return pb.TriggerScheduleResponse(
            runs=[convert.run_to_pb(r) for r in self._schedules.trigger(request.schedule_id)]
        )

    def ListRuns(self, request: pb.ListRunsRequest, context: Ctx) -> pb.ListRunsResponse:
        runs = self._schedules.runs(request.schedule_id, request.state, request.limit)
        return pb.ListRunsResponse(runs=[convert.run_to_pb(r) for r in runs])

    def GetStatus(self, request: pb.GetStatusRequest, context: Ctx) -> pb.SchedulerStatus:
        status = convert.status_to_pb(self._schedules.status(self._mode))
        if self._ping_workers is None:
            status.workers, status.workers_detail = -1, "embedded: runs execute in the scheduler process itself"
        else:
            status.workers, status.workers_detail = self._ping_workers()
        return status
