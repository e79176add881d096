"""Celery beat over SQL schedules, for real: cron timing, live edits, a beat pair behind the leader lock, and a
Redis restart. Real worker and beat processes, a real Redis, and sessions spawned on a real runtime."""

from __future__ import annotations

import itertools
import re
import time
import urllib.request
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import grpc
import pytest
import redis as redis_client
from google.protobuf.timestamp_pb2 import Timestamp

from jarvis.api.scheduler.v1 import scheduler_pb2 as pb
from tests.integration.scheduler.conftest import FINISHED, Runtime, Scheduler
from tests.support.redis_server import RedisServer
from tests.support.scheduler_env import CeleryProcess, scheduler_env, wait_for
from tests.support.stack import free_port

LEADER_GAUGE = re.compile(r"^jarvis_scheduler_beat_leader\s+([0-9.]+)\s*$", re.MULTILINE)


def at(stamp: Timestamp) -> datetime:
    """A protobuf Timestamp as an aware UTC datetime."""
    return stamp.ToDatetime(tzinfo=UTC)


def now() -> datetime:
    return datetime.now(UTC)


def start(scheduler: Scheduler, kind: str, name: str, env: dict[str, str] | None = None) -> CeleryProcess:
    """Like `Scheduler.celery` but not waiting for readiness, and with extra environment (a metrics port)."""
    process = CeleryProcess(
        kind, {**scheduler_env(scheduler.values), **(env or {})}, scheduler.tmp / f"{name}.log", name
    )
    scheduler.processes.append(process)
    return process


def leading(metrics_port: int) -> bool | None:
    """What a beat's /metrics says about the leader lock; None before its first tick."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return None
    match = LEADER_GAUGE.search(text)
    return None if match is None else float(match.group(1)) == 1.0


def count_stays(scheduler: Scheduler, schedule_id: str, expected: int, seconds: float) -> None:
    """No run appears for `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        runs = scheduler.runs(schedule_id)
        assert len(runs) == expected, f"runs appeared: {runs}"
        time.sleep(0.3)


def wait_runs(
    scheduler: Scheduler, schedule_id: str, enough: Callable[[list[pb.Run]], bool], timeout: float, what: str
) -> list[pb.Run]:
    def probe() -> list[pb.Run] | None:
        runs = scheduler.runs(schedule_id)
        return runs if enough(runs) else None

    return wait_for(
        probe, timeout, lambda: f"{what} not reached in {timeout}s: {scheduler.runs(schedule_id)}\n" + scheduler.logs()
    )


def assert_every_tick_fired_once(runs: list[pb.Run], targets: list[str], period: timedelta) -> list[datetime]:
    """One run per target per tick; consecutive ticks one period apart, or folded missed fires in between."""
    by_tick: dict[datetime, list[pb.Run]] = defaultdict(list)
    for run in runs:
        by_tick[at(run.tick)].append(run)
    for tick, group in by_tick.items():
        assert sorted(r.target for r in group) == sorted(targets), f"tick {tick}: {group}"
        assert len({r.idempotency_key for r in group}) == len(group)
        assert len({r.missed_ticks for r in group}) == 1, f"tick {tick}: {group}"
    ticks = sorted(by_tick)
    for previous, tick in itertools.pairwise(ticks):
        folded = by_tick[tick][0].missed_ticks
        assert tick - previous == period * (1 + folded), f"ticks {previous} -> {tick} (folded {folded}): {runs}"
        if folded:
            assert at(by_tick[tick][0].first_missed_tick) == previous + period
    return ticks


def between_runs(period: timedelta) -> Callable[[list[pb.Run]], bool]:
    """Every run finished a moment ago (its message acknowledged), and the next tick not imminent."""

    def idle(runs: list[pb.Run]) -> bool:
        if not runs or any(r.state not in FINISHED for r in runs):
            return False
        latest = max(runs, key=lambda r: at(r.tick))
        moment = now()
        return moment - at(latest.finished_at) >= timedelta(seconds=0.3) and at(
            latest.tick
        ) + period - moment >= timedelta(seconds=0.7)

    return idle


def test_cron_fires_on_time(celery_scheduler: Scheduler, runtime: Runtime) -> None:
    project = runtime.project("beat-on-time")
    worker, beat = start(celery_scheduler, "worker", "worker"), start(celery_scheduler, "beat", "beat")
    worker.wait_ready()
    beat.wait_ready()
    schedule = celery_scheduler.create([project], cron="* * * * * */3", prompt="on time")
    assert schedule.next_fire_at.seconds % 3 == 0

    runs = wait_runs(
        celery_scheduler, schedule.id, lambda rs: sum(r.state == "succeeded" for r in rs) >= 2, 30, "two succeeded runs"
    )
    runs.sort(key=lambda r: at(r.tick))
    assert not [r for r in runs if r.state in ("failed", "missed")], runs
    ticks = [at(r.tick) for r in runs]
    assert len(set(ticks)) == len(ticks), f"a tick fired twice: {runs}"
    for run, tick in zip(runs, ticks, strict=True):
        assert run.trigger == "cron", run
        assert run.missed_ticks == 0, run
        assert tick.second % 3 == 0, tick
        assert tick.microsecond == 0, tick
        lag = (at(run.queued_at) - tick).total_seconds()
        assert 0 <= lag < 2, f"beat fired {lag:.3f}s after the tick: {run}"
    for previous, tick in itertools.pairwise(ticks):
        assert tick - previous == timedelta(seconds=3), ticks
    assert ticks[0] >= at(schedule.created_at)

    for run in (r for r in runs if r.state == "succeeded"):
        latency = (at(run.session_started_at) - at(run.tick)).total_seconds()
        lag = (at(run.queued_at) - at(run.tick)).total_seconds()
        print(f"tick {at(run.tick):%H:%M:%S}: queued +{lag:.3f}s, session started +{latency:.3f}s")
        assert 0 <= latency < 30, run
        assert run.session_id


def test_update_and_delete_reach_the_running_beat(celery_scheduler: Scheduler, runtime: Runtime) -> None:
    project = runtime.project("beat-edits")
    worker, beat = start(celery_scheduler, "worker", "worker"), start(celery_scheduler, "beat", "beat")
    worker.wait_ready()
    beat.wait_ready()
    stub = celery_scheduler.stub
    assert stub is not None
    schedule = celery_scheduler.create([project], cron="* * * * * */2", prompt="edits")
    first = wait_runs(celery_scheduler, schedule.id, bool, 20, "a first run")
    assert all(at(r.tick).second % 2 == 0 for r in first), first

    # Disable: beat, reading schedules on every tick, stops firing at once.
    paused = stub.UpdateSchedule(pb.UpdateScheduleRequest(schedule_id=schedule.id, enabled=False), timeout=30)
    assert not paused.schedule.enabled
    assert not paused.schedule.HasField("next_fire_at")
    assert not paused.next_fires
    count = len(celery_scheduler.runs(schedule.id))
    count_stays(celery_scheduler, schedule.id, count, 5)
    assert not stub.GetSchedule(pb.ScheduleRef(schedule_id=schedule.id), timeout=30).schedule.HasField("next_fire_at")

    # Enable with a new cron: runs resume on the new ticks.
    resumed_at = now()
    resumed = stub.UpdateSchedule(
        pb.UpdateScheduleRequest(schedule_id=schedule.id, enabled=True, cron="* * * * * */3"), timeout=30
    )
    assert resumed.schedule.enabled
    assert resumed.schedule.cron == "* * * * * */3"
    assert at(resumed.schedule.next_fire_at) > resumed_at
    assert at(resumed.schedule.next_fire_at).second % 3 == 0

    def two_new(runs: list[pb.Run]) -> bool:
        return len(runs) >= count + 2

    runs = wait_runs(celery_scheduler, schedule.id, two_new, 20, "two runs after re-enabling")
    new = sorted((r for r in runs if at(r.tick) > resumed_at), key=lambda r: at(r.tick))
    assert len(new) == len(runs) - count, f"a run for a tick before re-enabling: {runs}"
    for run in new:
        assert at(run.tick).second % 3 == 0, run
        assert run.trigger == "cron", run
        assert run.missed_ticks == 0, run
    assert at(new[1].tick) - at(new[0].tick) == timedelta(seconds=3), new

    # Delete: no more runs; the schedule is gone, its runs stay as history.
    deleted = stub.DeleteSchedule(pb.ScheduleRef(schedule_id=schedule.id), timeout=30)
    assert deleted.schedule_id == schedule.id
    history = celery_scheduler.runs(schedule.id)
    count_stays(celery_scheduler, schedule.id, len(history), 5)
    with pytest.raises(grpc.RpcError) as missing:
        stub.GetSchedule(pb.ScheduleRef(schedule_id=schedule.id), timeout=30)
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    assert {r.id for r in celery_scheduler.runs(schedule.id)} == {r.id for r in history}
    assert schedule.id not in [s.id for s in stub.ListSchedules(pb.ListSchedulesRequest(), timeout=30).schedules]


def test_two_beats_fire_each_tick_once_and_the_survivor_takes_over(
    celery_scheduler: Scheduler, runtime: Runtime, redis: RedisServer
) -> None:
    targets = [runtime.project("beat-pair-a"), runtime.project("beat-pair-b")]
    ports = {"beat-a": free_port(), "beat-b": free_port()}
    beats = {
        name: start(celery_scheduler, "beat", name, {"JARVIS_METRICS_PORT": str(port)}) for name, port in ports.items()
    }
    worker = start(celery_scheduler, "worker", "worker")
    for process in (*beats.values(), worker):
        process.wait_ready()
    period = timedelta(seconds=2)
    schedule = celery_scheduler.create(targets, cron="* * * * * */2", prompt="pair")

    def leader() -> str | None:
        states = {name: leading(port) for name, port in ports.items() if beats[name].process.poll() is None}
        leaders = [name for name, state in states.items() if state]
        assert len(leaders) <= 1, f"two leaders: {states}"
        return leaders[0] if leaders and None not in states.values() else None

    first = wait_for(leader, 15, lambda: f"no leader\n{celery_scheduler.logs()}")
    lock = redis_client.Redis.from_url(redis.url)
    key = f"{celery_scheduler.values['queue']}:beat-leader"
    token = lock.get(key)
    assert token is not None
    assert 0 < lock.pttl(key) <= 3000

    runs = wait_runs(celery_scheduler, schedule.id, lambda rs: len({r.tick.seconds for r in rs}) >= 4, 20, "four ticks")
    assert_every_tick_fired_once(runs, targets, period)
    assert leader() == first, "the lead changed while both beats ran"

    beats[first].kill()
    killed_at = now()
    survivor = next(name for name in beats if name != first)
    # The dead leader's lease lapses within its TTL (3 s); the survivor then fires.
    wait_for(lambda: leader() == survivor or None, 3 + 5, lambda: f"{survivor} never led\n{celery_scheduler.logs()}")
    assert lock.get(key) not in (None, token)

    def two_after_kill(rs: list[pb.Run]) -> bool:
        return len({r.tick.seconds for r in rs if at(r.tick) > killed_at}) >= 2

    runs = wait_runs(celery_scheduler, schedule.id, two_after_kill, 3 + 10, "two ticks after the leader died")
    after = sorted(at(r.tick) for r in runs if at(r.tick) > killed_at)
    assert (after[0] - killed_at).total_seconds() < 3 + 2 + 1, f"takeover too slow: killed {killed_at}, {after}"
    ticks = assert_every_tick_fired_once(runs, targets, period)
    assert len(ticks) >= 6
    assert all(r.trigger in ("cron", "catch_up") for r in runs), runs
    finished = wait_runs(
        celery_scheduler,
        schedule.id,
        lambda rs: all(r.state in FINISHED for r in rs if at(r.tick) <= after[0]),
        30,
        "runs up to the takeover finished",
    )
    assert not [r for r in finished if r.state == "failed"], finished


def test_redis_restart_loses_no_schedule_and_strands_no_run(
    celery_scheduler: Scheduler, runtime: Runtime, redis: RedisServer
) -> None:
    project = runtime.project("beat-redis")
    worker, beat = start(celery_scheduler, "worker", "worker"), start(celery_scheduler, "beat", "beat")
    worker.wait_ready()
    beat.wait_ready()
    stub = celery_scheduler.stub
    assert stub is not None
    schedule = celery_scheduler.create([project], cron="* * * * * */2", prompt="through a restart")
    # Triggered while Redis is down, its run never reaches the queue: only beat's sweep can send it.
    manual = celery_scheduler.create([project], enabled=False, prompt="stranded")
    wait_runs(celery_scheduler, schedule.id, lambda rs: any(r.state == "succeeded" for r in rs), 30, "a succeeded run")
    # Stop Redis between runs: no message unacknowledged (see the in-flight test below).
    wait_runs(celery_scheduler, schedule.id, between_runs(timedelta(seconds=2)), 20, "a moment between runs")

    redis.stop()
    try:
        stopped_at = now()
        assert stub.GetSchedule(pb.ScheduleRef(schedule_id=schedule.id), timeout=30).schedule.enabled
        assert stub.GetStatus(pb.GetStatusRequest(), timeout=30).queue_depth == -1
        (stranded,) = stub.TriggerSchedule(pb.ScheduleRef(schedule_id=manual.id), timeout=30).runs
        assert stranded.state == "pending"  # not on the queue, and the reply says why
        assert "Redis" in stranded.error
        time.sleep(max(0.0, 3 - (now() - stopped_at).total_seconds()))
    finally:
        redis.start()
    restarted_at = now()

    detail = stub.GetSchedule(pb.ScheduleRef(schedule_id=schedule.id), timeout=30)
    assert detail.schedule.enabled
    assert detail.schedule.cron == "* * * * * */2"
    assert list(detail.schedule.targets) == [project]

    def succeeded_after_restart(rs: list[pb.Run]) -> bool:
        return any(r.state == "succeeded" and at(r.tick) > restarted_at for r in rs)

    wait_runs(celery_scheduler, schedule.id, succeeded_after_restart, 30, "a run fired after the restart succeeding")
    # The run stranded in SQL was re-sent once older than requeue_after (5 s), by a sweep (every 2 s).
    done = celery_scheduler.wait_run(manual.id, stranded.id, timeout=20)
    assert done.state == "succeeded", done
    assert (at(done.started_at) - at(stranded.queued_at)).total_seconds() >= 5, done
    caught_up_at = now()
    runs = wait_runs(
        celery_scheduler,
        schedule.id,
        lambda rs: all(r.state in FINISHED for r in rs if at(r.queued_at) <= caught_up_at),
        20,
        "every run queued before the catch-up finished",
    )
    assert not [r for r in runs if r.state == "failed"], runs
    ticks = [at(r.tick) for r in runs if r.trigger != "missed"]
    assert len(set(ticks)) == len(ticks), runs


def test_redis_outage_during_a_run_keeps_the_worker(
    celery_scheduler: Scheduler, runtime: Runtime, redis: RedisServer
) -> None:
    project = runtime.project("beat-redis-in-flight")
    worker, beat = start(celery_scheduler, "worker", "worker"), start(celery_scheduler, "beat", "beat")
    worker.wait_ready()
    beat.wait_ready()
    schedule = celery_scheduler.create([project], cron="* * * * * */3", prompt="sleep 4")
    in_flight = wait_for(
        lambda: next((r for r in celery_scheduler.runs(schedule.id) if r.state == "running" and r.session_id), None),
        30,
        lambda: f"no run in flight: {celery_scheduler.runs(schedule.id)}\n{celery_scheduler.logs()}",
    )
    redis.stop()
    try:
        time.sleep(3)
    finally:
        redis.start()
    restarted_at = now()
    # The run in flight when Redis went away finishes on its worker (its session never needed Redis).
    done = celery_scheduler.wait_run(schedule.id, in_flight.id, timeout=20)
    assert done.state == "succeeded", done

    def succeeded_after_restart(rs: list[pb.Run]) -> bool:
        return any(r.state == "succeeded" and at(r.tick) > restarted_at for r in rs)

    wait_runs(celery_scheduler, schedule.id, succeeded_after_restart, 20, "a run fired after the restart succeeding")
    assert worker.process.poll() is None, celery_scheduler.logs()
