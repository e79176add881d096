"""Runs of the embedded scheduler against a real runtime: firing, concurrency, failures, bad input, restarts."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest

from jarvis.api.runtime.v1 import runtime_pb2 as rpb
from jarvis.api.scheduler.v1 import scheduler_pb2 as pb
from jarvis.api.scheduler.v1 import scheduler_pb2_grpc as pb_grpc
from tests.integration.scheduler.conftest import Runtime, Scheduler, base_values
from tests.support.scheduler_env import wait_for
from tests.support.stack import free_port


def api(scheduler: Scheduler) -> pb_grpc.SchedulerServiceStub:
    assert scheduler.stub is not None
    return scheduler.stub


def trigger(scheduler: Scheduler, schedule_id: str) -> list[pb.Run]:
    return list(api(scheduler).TriggerSchedule(pb.ScheduleRef(schedule_id=schedule_id), timeout=30).runs)


def wait_state(scheduler: Scheduler, schedule_id: str, run_id: str, state: str, timeout: float = 60) -> pb.Run:
    return scheduler.wait_run(schedule_id, run_id, (state,), timeout)


def run_of(scheduler: Scheduler, schedule_id: str, run_id: str) -> pb.Run:
    (run,) = [r for r in scheduler.runs(schedule_id) if r.id == run_id]
    return run


def sessions_with_key(runtime: Runtime, project: str, key: str) -> list[rpb.Session]:
    return [s for s in runtime.sessions(project) if s.idempotency_key == key]


@contextmanager
def scheduler_at(tmp: Path, runtime_target: str, **overrides: Any) -> Iterator[Scheduler]:
    """An embedded scheduler on the database at `tmp` (shared by every scheduler opened there)."""
    scheduler = Scheduler(tmp, base_values(tmp, runtime_target, "", **overrides), None)
    try:
        scheduler.serve()
        yield scheduler
    finally:
        scheduler.close()


def dead_target() -> str:
    """A loopback port nothing listens on: a runtime that is down."""
    return f"127.0.0.1:{free_port()}"


def rpc_error(call: Any, *args: Any, **kwargs: Any) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as err:
        call(*args, timeout=30, **kwargs)
    return err.value


# 1. The in-process timer -------------------------------------------------------------------------------------


def test_embedded_timer_fires_a_seconds_cron_into_a_session(embedded_scheduler: Scheduler, runtime: Runtime) -> None:
    project = runtime.project("sched-timer")
    schedule = embedded_scheduler.create([project], cron="* * * * * */2", prompt="tick")
    assert schedule.next_fire_at.ToDatetime().second % 2 == 0

    done = wait_for(
        lambda: next(
            (r for r in embedded_scheduler.runs(schedule.id) if r.trigger == "cron" and r.state == "succeeded"), None
        ),
        60,
        lambda: f"no cron run succeeded: {embedded_scheduler.runs(schedule.id)}",
    )
    api(embedded_scheduler).UpdateSchedule(pb.UpdateScheduleRequest(schedule_id=schedule.id, enabled=False), timeout=30)

    tick = done.tick.ToDatetime()
    assert tick.second % 2 == 0
    assert tick.microsecond == 0
    assert done.idempotency_key == f"{schedule.id}:{project}:{tick:%Y%m%dT%H%M%S}.000000Z"
    assert done.missed_ticks == 0
    assert done.session_id
    assert done.session_started_at.ToDatetime() >= tick
    assert [s.id for s in sessions_with_key(runtime, project, done.idempotency_key)] == [done.session_id]
    # Every fire has its own key: the runtime never holds two sessions for one.
    keys = [s.idempotency_key for s in runtime.sessions(project)]
    assert len(keys) == len(set(keys))


# 2. Concurrency --------------------------------------------------------------------------------------------------


def test_a_fire_while_the_previous_run_goes_is_skipped_with_policy_skip(
    embedded_scheduler: Scheduler, runtime: Runtime
) -> None:
    project = runtime.project("sched-skip")
    schedule = embedded_scheduler.create([project], prompt="sleep 4")
    assert schedule.concurrency == "skip"
    (first,) = trigger(embedded_scheduler, schedule.id)
    wait_state(embedded_scheduler, schedule.id, first.id, "running", 30)

    (second,) = trigger(embedded_scheduler, schedule.id)

    skipped = embedded_scheduler.wait_run(schedule.id, second.id, timeout=30)
    assert skipped.state == "skipped", skipped.error
    assert first.id in skipped.error
    assert "still running" in skipped.error
    assert not skipped.session_id
    assert run_of(embedded_scheduler, schedule.id, first.id).state == "running"  # it outlasts the skip
    done = embedded_scheduler.wait_run(schedule.id, first.id, timeout=60)
    assert done.state == "succeeded", done.error
    assert sessions_with_key(runtime, project, second.idempotency_key) == []
    assert len(sessions_with_key(runtime, project, first.idempotency_key)) == 1


def test_two_triggers_at_once_with_policy_skip_run_one_session(embedded_scheduler: Scheduler, runtime: Runtime) -> None:
    project = runtime.project("sched-skip-race")
    schedule = embedded_scheduler.create([project], prompt="sleep 3")
    (first,) = trigger(embedded_scheduler, schedule.id)
    (second,) = trigger(embedded_scheduler, schedule.id)  # before the first is even claimed, most likely

    done = [embedded_scheduler.wait_run(schedule.id, r.id, timeout=60) for r in (first, second)]

    # Claims are serialised: whichever is claimed second sees the other running and is skipped.
    assert sorted(r.state for r in done) == ["skipped", "succeeded"], done
    ran, skipped = sorted(done, key=lambda r: r.state != "succeeded")
    assert ran.id in skipped.error
    assert [s.id for s in runtime.sessions(project)] == [ran.session_id]


def test_a_fire_while_the_previous_run_goes_waits_its_turn_with_policy_queue(
    embedded_scheduler: Scheduler, runtime: Runtime
) -> None:
    project = runtime.project("sched-queue")
    schedule = embedded_scheduler.create([project], prompt="sleep 4", concurrency="queue")
    assert schedule.concurrency == "queue"
    (first,) = trigger(embedded_scheduler, schedule.id)
    wait_state(embedded_scheduler, schedule.id, first.id, "running", 30)

    (second,) = trigger(embedded_scheduler, schedule.id)

    # It re-checks its turn every queue_poll_seconds (0.5 s) and stays queued while the first one goes.
    seen_waiting = 0
    while run_of(embedded_scheduler, schedule.id, first.id).state == "running":
        waiting = run_of(embedded_scheduler, schedule.id, second.id)
        if run_of(embedded_scheduler, schedule.id, first.id).state != "running":
            break  # the first finished between the two reads: the second may have started legitimately
        assert waiting.state == "queued", waiting
        assert not waiting.session_id
        seen_waiting += 1
        time.sleep(0.2)
    assert seen_waiting >= 3  # the first sleeps 4 s: the second was seen waiting for a while

    done_first = embedded_scheduler.wait_run(schedule.id, first.id, timeout=30)
    done_second = embedded_scheduler.wait_run(schedule.id, second.id, timeout=60)
    assert done_first.state == done_second.state == "succeeded", (done_first.error, done_second.error)
    assert done_second.session_id
    assert done_second.session_id != done_first.session_id
    first_finished = done_first.finished_at.ToDatetime()
    assert done_second.started_at.ToDatetime() >= first_finished
    assert done_second.session_started_at.ToDatetime() >= first_finished
    (first_session,) = sessions_with_key(runtime, project, first.idempotency_key)
    (second_session,) = sessions_with_key(runtime, project, second.idempotency_key)
    assert second_session.created_at.ToDatetime() >= first_finished
    assert first_session.ended_at.ToDatetime() <= second_session.created_at.ToDatetime()


# 3./4. Failures a run reports ------------------------------------------------------------------------------------


def test_an_agent_error_fails_the_run_with_the_agents_reason(embedded_scheduler: Scheduler, runtime: Runtime) -> None:
    project = runtime.project("sched-fail")
    schedule = embedded_scheduler.create([project], prompt="fail")
    (run,) = trigger(embedded_scheduler, schedule.id)

    done = embedded_scheduler.wait_run(schedule.id, run.id)

    assert done.state == "failed"
    assert "it broke" in done.error
    assert "error_during_execution" in done.error
    assert done.session_id
    assert done.attempts == 1


def test_a_target_deleted_after_the_schedule_was_made_fails_its_run(
    embedded_scheduler: Scheduler, runtime: Runtime
) -> None:
    kept, deleted = runtime.project("sched-kept"), runtime.project("sched-gone")
    schedule = embedded_scheduler.create([kept, deleted], prompt="hello")
    runtime.stub.DeleteProject(rpb.ProjectRef(project_id=deleted), timeout=60)

    runs = {r.target: r for r in trigger(embedded_scheduler, schedule.id)}

    gone = embedded_scheduler.wait_run(schedule.id, runs[deleted].id)
    assert gone.state == "failed"
    assert f"target project '{deleted}' no longer exists" in gone.error
    assert "remove it from the schedule's targets" in gone.error
    assert not gone.session_id
    assert gone.attempts == 1  # not retried: the project will not come back
    ok = embedded_scheduler.wait_run(schedule.id, runs[kept].id)
    assert ok.state == "succeeded", ok.error  # the other target is unaffected


# 5. The runtime is down ------------------------------------------------------------------------------------------


def test_creating_a_schedule_while_the_runtime_is_down_says_so(tmp_path: Path) -> None:
    with scheduler_at(tmp_path, dead_target(), retry_max=2) as scheduler:
        error = rpc_error(
            api(scheduler).CreateSchedule,
            pb.CreateScheduleRequest(cron="0 3 * * *", prompt="hello", targets=["p0123456789ab"]),
        )

        assert error.code() == grpc.StatusCode.UNAVAILABLE
        assert "the runtime service at 127.0.0.1:" in error.details()
        assert "is unreachable" in error.details()
        assert "check that `jarvis serve runtime` is running" in error.details()
        assert api(scheduler).ListSchedules(pb.ListSchedulesRequest(), timeout=30).schedules == []


def test_a_run_while_the_runtime_is_down_fails_after_its_retries(tmp_path: Path, runtime: Runtime) -> None:
    project = runtime.project("sched-down")
    with scheduler_at(tmp_path, runtime.target) as live:
        schedule = live.create([project], prompt="hello")

    with scheduler_at(tmp_path, dead_target(), retry_max=2) as dead:
        (run,) = trigger(dead, schedule.id)
        done = dead.wait_run(schedule.id, run.id, timeout=60)

    assert done.state == "failed"
    assert "unreachable" in done.error
    assert "after 3 attempts" in done.error
    assert done.attempts == 3  # retry_max + 1
    assert not done.session_id
    assert sessions_with_key(runtime, project, run.idempotency_key) == []


# 6. Bad input ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def input_project(runtime: Runtime) -> str:
    return runtime.project("sched-input")


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"cron": "61 * * * *"}, "cron '61 * * * *' is not valid"),
        ({"cron": "every day"}, "has 2 fields"),
        ({"cron": "0 0 30 2 *"}, "never fires"),
        ({"cron": "* * * * * * *"}, "has 7 fields"),
        ({"targets": ["p0123456789ab"]}, "unknown target project(s): p0123456789ab"),
        ({"targets": []}, "targets is empty"),
        ({"prompt": "   "}, "prompt is empty"),
        ({"timezone": "Mars/Olympus"}, "time zone 'Mars/Olympus' is unknown"),
        ({"concurrency": "sometimes"}, "concurrency 'sometimes' is unknown; use one of skip, queue"),
        ({"missed": "forget"}, "missed 'forget' is unknown; use one of run_once, record"),
    ],
)
def test_bad_input_at_creation_is_refused_with_the_reason(
    embedded_scheduler: Scheduler, input_project: str, fields: dict[str, Any], says: str
) -> None:
    request: dict[str, Any] = {"cron": "0 3 * * *", "prompt": "hello", "targets": [input_project], **fields}

    error = rpc_error(api(embedded_scheduler).CreateSchedule, pb.CreateScheduleRequest(**request))

    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
    assert says in error.details()
    assert api(embedded_scheduler).ListSchedules(pb.ListSchedulesRequest(), timeout=30).schedules == []


def test_an_update_with_a_bad_part_changes_nothing(embedded_scheduler: Scheduler, runtime: Runtime) -> None:
    project = runtime.project("sched-update")
    schedule = embedded_scheduler.create([project], cron="0 3 * * *", prompt="hello")
    stub = api(embedded_scheduler)
    before = stub.GetSchedule(pb.ScheduleRef(schedule_id=schedule.id), timeout=30)
    bad_updates = [
        # Targets are checked with the runtime before the transaction opens ...
        (
            pb.UpdateScheduleRequest(
                schedule_id=schedule.id,
                cron="*/5 * * * *",
                prompt="changed",
                targets=pb.Targets(ids=[project, "p0123456789ab"]),
            ),
            "unknown target",
        ),
        # ... the rest inside it, after the cron was already applied to the row: rolled back whole.
        (
            pb.UpdateScheduleRequest(schedule_id=schedule.id, cron="*/5 * * * *", concurrency="sometimes"),
            "concurrency 'sometimes' is unknown",
        ),
        (
            pb.UpdateScheduleRequest(schedule_id=schedule.id, cron="*/5 * * * *", name="x" * 101, enabled=False),
            "name has 101 characters",
        ),
        (
            pb.UpdateScheduleRequest(schedule_id=schedule.id, cron="*/5 * * * *", timezone="Mars/Olympus"),
            "time zone 'Mars/Olympus' is unknown",
        ),
        (pb.UpdateScheduleRequest(schedule_id=schedule.id, prompt="changed", cron="61 * * * *"), "is not valid"),
    ]
    for request, says in bad_updates:
        error = rpc_error(stub.UpdateSchedule, request)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
        assert says in error.details()
        after = stub.GetSchedule(pb.ScheduleRef(schedule_id=schedule.id), timeout=30)
        assert after.schedule == before.schedule, says

    assert before.schedule.cron == "0 3 * * *"
    fires = [t.ToDatetime().replace(tzinfo=UTC) for t in before.next_fires]
    assert len(fires) == 5
    assert fires[0] > datetime.now(UTC) - timedelta(seconds=5)
    assert all((f.hour, f.minute, f.second) == (3, 0, 0) for f in fires)
    assert all(b - a == timedelta(days=1) for a, b in itertools.pairwise(fires))
    assert fires[0] == before.schedule.next_fire_at.ToDatetime().replace(tzinfo=UTC)


def test_a_good_update_applies_whole(embedded_scheduler: Scheduler, runtime: Runtime) -> None:
    project, other = runtime.project("sched-upd-a"), runtime.project("sched-upd-b")
    schedule = embedded_scheduler.create([project], cron="0 3 * * *", prompt="hello")

    detail = api(embedded_scheduler).UpdateSchedule(
        pb.UpdateScheduleRequest(
            schedule_id=schedule.id,
            cron="30 4 * * *",
            timezone="Europe/Paris",
            targets=pb.Targets(ids=[other]),
            concurrency="queue",
        ),
        timeout=30,
    )

    assert (
        detail.schedule.cron,
        detail.schedule.timezone,
        list(detail.schedule.targets),
        detail.schedule.concurrency,
        detail.schedule.prompt,
    ) == ("30 4 * * *", "Europe/Paris", [other], "queue", "hello")
    fires = [t.ToDatetime().replace(tzinfo=UTC) for t in detail.next_fires]
    assert len(fires) == 5
    assert {(f.hour, f.minute) for f in fires} <= {(2, 30), (3, 30)}  # 04:30 in Paris (CEST or CET)


# 7. Restart ------------------------------------------------------------------------------------------------------


def test_a_run_left_queued_by_a_stopped_embedded_scheduler_completes_after_restart(
    tmp_path: Path, runtime: Runtime
) -> None:
    project = runtime.project("sched-restart")
    with scheduler_at(tmp_path, runtime.target) as live:
        schedule = live.create([project], prompt="hello")

    # Down: the runtime is unreachable and the run keeps retrying (it is never given up here).
    with scheduler_at(tmp_path, dead_target(), retry_max=1000, retry_base_seconds=0.3, retry_cap_seconds=0.5) as dead:
        (run,) = trigger(dead, schedule.id)
        retrying = wait_for(
            lambda: next((r for r in dead.runs(schedule.id) if r.id == run.id and r.attempts >= 2), None),
            30,
            lambda: f"run not retried: {dead.runs(schedule.id)}",
        )
    assert retrying.state in ("queued", "running")
    assert "unreachable" in retrying.error
    time.sleep(1)  # past its retry time, and any attempt in flight has ended

    # Only the new process's first sweep may send it again: the periodic one waits requeue_after_seconds.
    restarted_at = datetime.now(UTC)
    with scheduler_at(tmp_path, runtime.target, requeue_after_seconds=600) as restarted:
        done = restarted.wait_run(schedule.id, run.id, timeout=60)

    assert done.state == "succeeded", done.error
    assert done.attempts > retrying.attempts
    assert done.session_started_at.ToDatetime().replace(tzinfo=UTC) >= restarted_at
    assert done.session_id
    assert [s.id for s in sessions_with_key(runtime, project, run.idempotency_key)] == [done.session_id]


def test_a_run_waiting_to_retry_when_its_scheduler_stopped_resumes_after_restart(
    tmp_path: Path, runtime: Runtime
) -> None:
    project = runtime.project("sched-restart-retry")
    with scheduler_at(tmp_path, runtime.target) as live:
        schedule = live.create([project], prompt="hello")
    with scheduler_at(tmp_path, dead_target(), retry_max=1000, retry_base_seconds=4, retry_cap_seconds=4) as dead:
        (run,) = trigger(dead, schedule.id)
        wait_for(
            lambda: next((r for r in dead.runs(schedule.id) if r.id == run.id and "retrying in 4s" in r.error), None),
            30,
            lambda: f"run not waiting to retry: {dead.runs(schedule.id)}",
        )

    # Restarted at once: the retry is still seconds ahead. The run must resume when it is due, not only once
    # requeue_after_seconds passed since it was sent.
    with scheduler_at(tmp_path, runtime.target, requeue_after_seconds=600) as restarted:
        done = restarted.wait_run(schedule.id, run.id, timeout=30)

    assert done.state == "succeeded", done.error
    assert [s.id for s in sessions_with_key(runtime, project, run.idempotency_key)] == [done.session_id]


# 6. Secret overrides ----------------------------------------------------------------------------------------------


def test_a_schedules_secret_overrides_reach_its_runs_sessions(embedded_scheduler: Scheduler, runtime: Runtime) -> None:
    # The agent reports the length of DEPLOY_TOKEN (its value would be masked in its events).
    report = 'echo "{\\"type\\":\\"result\\",\\"subtype\\":\\"success\\",\\"result\\":\\"len=${#DEPLOY_TOKEN}\\"}"'
    project = runtime.stub.CreateProject(
        rpb.CreateProjectRequest(name="sched-secrets", agent_command=["sh", "-c", f"{report}; cat >/dev/null"]),
        timeout=60,
    ).id
    for name, value in (("DEPLOY_TOKEN", "d" * 10), ("NIGHTLY_TOKEN", "n" * 23)):
        runtime.stub.SetSecret(rpb.SetSecretRequest(project_id=project, name=name, value=value), timeout=30)
    schedule = embedded_scheduler.create([project], prompt="go", secret_overrides={"DEPLOY_TOKEN": "NIGHTLY_TOKEN"})
    assert dict(schedule.secret_overrides) == {"DEPLOY_TOKEN": "NIGHTLY_TOKEN"}

    (run,) = trigger(embedded_scheduler, schedule.id)
    done = embedded_scheduler.wait_run(schedule.id, run.id)
    assert done.state == "succeeded", done.error
    events = runtime.stub.SessionEvents(
        rpb.SessionEventsRequest(project_id=project, session_id=done.session_id, limit=100), timeout=30
    ).events
    assert "len=23" in " ".join(e.payload_json for e in events)

    # An override naming a secret the project lacks fails the run with what to do.
    assert embedded_scheduler.stub is not None
    embedded_scheduler.stub.UpdateSchedule(
        pb.UpdateScheduleRequest(
            schedule_id=schedule.id, secret_overrides=pb.SecretOverrides(pairs={"DEPLOY_TOKEN": "MISSING"})
        ),
        timeout=30,
    )
    (bad,) = trigger(embedded_scheduler, schedule.id)
    failed = embedded_scheduler.wait_run(schedule.id, bad.id)
    assert failed.state == "failed"
    assert "MISSING" in failed.error
    assert "secret_set" in failed.error
