"""Runs through real Celery worker and beat processes on a real Redis, spawning real sessions."""

from __future__ import annotations

from jarvis.api.scheduler.v1 import scheduler_pb2 as pb
from tests.integration.scheduler.conftest import Runtime, Scheduler
from tests.support.scheduler_env import wait_for


def test_trigger_runs_once_on_every_target_through_a_worker(celery_scheduler: Scheduler, runtime: Runtime) -> None:
    targets = [runtime.project("sched-a"), runtime.project("sched-b")]
    schedule = celery_scheduler.create(targets, prompt="nightly triage")
    celery_scheduler.celery("worker")
    assert celery_scheduler.stub is not None
    runs = celery_scheduler.stub.TriggerSchedule(pb.ScheduleRef(schedule_id=schedule.id), timeout=30).runs
    assert sorted(r.target for r in runs) == sorted(targets)
    for run in runs:
        assert run.idempotency_key.startswith(f"{schedule.id}:{run.target}:")
        done = celery_scheduler.wait_run(schedule.id, run.id)
        assert done.state == "succeeded", done.error
        assert done.session_id
        assert done.session_started_at.ToDatetime() >= done.tick.ToDatetime()
        sessions = [s for s in runtime.sessions(run.target) if s.idempotency_key == run.idempotency_key]
        assert [s.id for s in sessions] == [done.session_id]


def test_worker_killed_mid_run_completes_the_run_once(celery_scheduler: Scheduler, runtime: Runtime) -> None:
    project = runtime.project("sched-kill")
    schedule = celery_scheduler.create([project], prompt="sleep 4")
    worker = celery_scheduler.celery("worker", "doomed")
    assert celery_scheduler.stub is not None
    (run,) = celery_scheduler.stub.TriggerSchedule(pb.ScheduleRef(schedule_id=schedule.id), timeout=30).runs
    running = wait_for(
        lambda: next(
            (r for r in celery_scheduler.runs(schedule.id) if r.id == run.id and r.state == "running" and r.session_id),
            None,
        ),
        30,
        celery_scheduler.logs,
    )
    worker.kill()
    celery_scheduler.celery("worker", "rescuer")
    # Beat's sweep (or Redis's visibility timeout) hands the run to the new worker once the lease lapses.
    celery_scheduler.celery("beat")
    done = celery_scheduler.wait_run(schedule.id, run.id, timeout=60)
    assert done.state == "succeeded", done.error
    assert done.attempts >= 2
    assert done.session_id == running.session_id
    sessions = [s for s in runtime.sessions(project) if s.idempotency_key == run.idempotency_key]
    assert len(sessions) == 1
