"""Domain values to protobuf messages of jarvis.api.scheduler.v1."""

from __future__ import annotations

from jarvis.api.scheduler.v1 import scheduler_pb2 as pb
from jarvis.common.protobuf import timestamp
from jarvis.scheduler.domain.models import Run, Schedule, ScheduleDetail, Status


def schedule_to_pb(s: Schedule) -> pb.Schedule:
    return pb.Schedule(
        id=s.id,
        name=s.name,
        cron=s.cron,
        timezone=s.timezone,
        prompt=s.prompt,
        targets=s.targets,
        enabled=s.enabled,
        concurrency=s.concurrency,
        missed=s.missed,
        created_by=s.created_by,
        secret_overrides=s.secret_overrides,
        created_at=timestamp(s.created_at),
        updated_at=timestamp(s.updated_at),
        next_fire_at=timestamp(s.next_fire_at),
        last_fired_at=timestamp(s.last_fired_at),
        paused_reason=s.paused_reason,
    )


def run_to_pb(r: Run) -> pb.Run:
    return pb.Run(
        id=r.id,
        schedule_id=r.schedule_id,
        target=r.target,
        tick=timestamp(r.tick),
        trigger=r.trigger,
        state=r.state,
        idempotency_key=r.idempotency_key,
        session_id=r.session_id,
        attempts=r.attempts,
        error=r.error,
        missed_ticks=r.missed_ticks,
        first_missed_tick=timestamp(r.first_missed_tick),
        queued_at=timestamp(r.queued_at),
        started_at=timestamp(r.started_at),
        session_started_at=timestamp(r.session_started_at),
        finished_at=timestamp(r.finished_at),
    )


def detail_to_pb(d: ScheduleDetail) -> pb.ScheduleDetail:
    fires = [t for t in map(timestamp, d.next_fires) if t is not None]
    return pb.ScheduleDetail(
        schedule=schedule_to_pb(d.schedule), next_fires=fires, recent_runs=[run_to_pb(r) for r in d.recent_runs]
    )


def status_to_pb(s: Status) -> pb.SchedulerStatus:
    return pb.SchedulerStatus(
        mode=s.mode,
        schedules=s.schedules,
        enabled=s.enabled,
        runs_by_state=s.runs_by_state,
        queue_depth=s.queue_depth,
        detail=s.detail,
    )
