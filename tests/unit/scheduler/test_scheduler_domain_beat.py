"""Beat on a real SQLite database with a driven clock: on-time fires, missed fires, several beats at once."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy import select, update

from jarvis.common.sql.database import Database
from jarvis.scheduler.domain.beat import Beat
from jarvis.scheduler.domain.models import NewSchedule, Run, ScheduleChanges
from jarvis.scheduler.domain.rows import to_run
from jarvis.scheduler.domain.schedules import Schedules
from jarvis.scheduler.storage.models import RunRow
from tests.unit.scheduler.scheduler_doubles import GRACE_SECONDS, Clock, RecordingDispatcher, make_beat

TARGETS = ["prj_alpha", "prj_beta"]
KEY = re.compile(r"^sch_[0-9a-f]{12}:prj_[a-z]+:\d{8}T\d{6}\.\d{6}Z$")


def every_five_minutes(schedules: Schedules, missed: str = "run_once") -> tuple[str, datetime]:
    """A '*/5 * * * *' schedule on TARGETS: its id and its first fire."""
    detail = schedules.create(NewSchedule(cron="*/5 * * * *", prompt="report", targets=TARGETS, missed=missed))
    assert detail.schedule.next_fire_at is not None
    return detail.schedule.id, detail.schedule.next_fire_at


def ticks_of_five_minutes(first: datetime, until: datetime) -> list[datetime]:
    """The fires of '*/5 * * * *' in [first, until], counted without the cron library."""
    ticks = []
    tick = first
    while tick <= until:
        ticks.append(tick)
        tick += timedelta(minutes=5)
    return ticks


def all_runs(db: Database, schedule_id: str = "") -> list[Run]:
    with db.read() as session:
        query = select(RunRow).order_by(RunRow.target, RunRow.trigger)
        if schedule_id:
            query = query.where(RunRow.schedule_id == schedule_id)
        return [to_run(r) for r in session.scalars(query).all()]


def test_on_time_fire_queues_one_cron_run_per_target(
    schedules: Schedules, beat: Beat, db: Database, clock: Clock, dispatcher: RecordingDispatcher
) -> None:
    schedule_id, due = every_five_minutes(schedules)
    assert due == datetime(2025, 1, 6, 10, 5, tzinfo=UTC)
    clock.set(due - timedelta(seconds=0.5))
    assert beat.fire_due() == []
    clock.set(due + timedelta(seconds=0.5))

    queued = beat.fire_due()

    runs = all_runs(db, schedule_id)
    assert sorted(queued) == sorted(r.id for r in runs) == sorted(dispatcher.dispatched)
    assert [r.target for r in runs] == TARGETS
    for run in runs:
        assert (run.trigger, run.state, run.tick, run.missed_ticks) == ("cron", "queued", due, 0)
        assert run.first_missed_tick is None
        assert run.idempotency_key == f"{schedule_id}:{run.target}:20250106T100500.000000Z"
        assert KEY.match(run.idempotency_key), run.idempotency_key
    schedule = schedules.get(schedule_id).schedule
    assert schedule.next_fire_at == due + timedelta(minutes=5)
    assert schedule.last_fired_at == clock.now
    assert beat.fire_due() == []  # the same instant again: nothing new


def test_missed_hour_with_run_once_queues_a_single_catch_up_run_per_target(
    schedules: Schedules, beat: Beat, db: Database, clock: Clock, dispatcher: RecordingDispatcher
) -> None:
    schedule_id, due = every_five_minutes(schedules)
    # The scheduler was down: it comes back an hour past the due fire, and later than the grace after the last tick.
    clock.set(due + timedelta(hours=1, minutes=2, seconds=30))
    ticks = ticks_of_five_minutes(due, clock.now)
    assert len(ticks) == 13  # 10:05 .. 11:05
    assert (clock.now - ticks[-1]).total_seconds() > GRACE_SECONDS

    queued = beat.fire_due()

    runs = all_runs(db, schedule_id)
    assert sorted(queued) == sorted(r.id for r in runs) == sorted(dispatcher.dispatched)
    assert [r.target for r in runs] == TARGETS  # exactly one run per target: no stampede of 13
    for run in runs:
        assert (run.trigger, run.state, run.tick) == ("catch_up", "queued", ticks[-1])
        assert run.missed_ticks == len(ticks) - 1  # the ticks it stands for besides its own
        assert run.first_missed_tick == ticks[0]
        assert run.idempotency_key == f"{schedule_id}:{run.target}:20250106T110500.000000Z"
    next_fire = schedules.get(schedule_id).schedule.next_fire_at
    assert next_fire is not None
    assert next_fire > clock.now
    assert next_fire == ticks[-1] + timedelta(minutes=5)

    assert beat.fire_due() == []  # a second sweep at the same instant creates nothing
    assert len(all_runs(db, schedule_id)) == len(TARGETS)
    assert sorted(dispatcher.dispatched) == sorted(queued)


def test_missed_fires_on_time_again_with_run_once_fold_into_the_cron_run(
    schedules: Schedules, beat: Beat, db: Database, clock: Clock
) -> None:
    schedule_id, due = every_five_minutes(schedules)
    clock.set(due + timedelta(hours=1, seconds=0.5))  # back exactly at a tick: that tick is on time
    ticks = ticks_of_five_minutes(due, clock.now)

    beat.fire_due()

    runs = all_runs(db, schedule_id)
    assert [r.target for r in runs] == TARGETS
    for run in runs:
        assert (run.trigger, run.state, run.tick) == ("cron", "queued", ticks[-1])
        assert (run.missed_ticks, run.first_missed_tick) == (len(ticks) - 1, ticks[0])


def test_missed_hour_with_policy_record_writes_one_missed_record_per_target_and_runs_nothing(
    schedules: Schedules, beat: Beat, db: Database, clock: Clock, dispatcher: RecordingDispatcher
) -> None:
    schedule_id, due = every_five_minutes(schedules, missed="record")
    clock.set(due + timedelta(hours=1, minutes=2, seconds=30))
    ticks = ticks_of_five_minutes(due, clock.now)

    assert beat.fire_due() == []

    runs = all_runs(db, schedule_id)
    assert [r.target for r in runs] == TARGETS
    for run in runs:
        assert (run.trigger, run.state, run.tick) == ("missed", "missed", ticks[-1])
        assert run.missed_ticks == len(ticks)
        assert run.first_missed_tick == ticks[0]
        assert f"{len(ticks)} fire(s) from {ticks[0].isoformat()} to {ticks[-1].isoformat()}" in run.error
        assert "record" in run.error
        assert run.finished_at == clock.now
        assert not run.session_id
    assert [r.state for r in all_runs(db, schedule_id)] == ["missed"] * len(TARGETS)  # nothing queued
    assert dispatcher.dispatched == []
    next_fire = schedules.get(schedule_id).schedule.next_fire_at
    assert next_fire is not None
    assert next_fire > clock.now
    assert beat.fire_due() == []
    assert len(all_runs(db, schedule_id)) == len(TARGETS)


def test_policy_record_back_on_time_records_the_gap_and_runs_the_current_tick(
    schedules: Schedules, beat: Beat, db: Database, clock: Clock
) -> None:
    schedule_id, due = every_five_minutes(schedules, missed="record")
    clock.set(due + timedelta(hours=1, seconds=0.5))
    ticks = ticks_of_five_minutes(due, clock.now)

    queued = beat.fire_due()

    runs = all_runs(db, schedule_id)
    missed = [r for r in runs if r.state == "missed"]
    current = [r for r in runs if r.state == "queued"]
    assert sorted(r.id for r in current) == sorted(queued)
    assert [r.target for r in missed] == [r.target for r in current] == TARGETS
    for run in missed:
        assert (run.missed_ticks, run.first_missed_tick, run.tick) == (len(ticks) - 1, ticks[0], ticks[-2])
        assert f"from {ticks[0].isoformat()} to {ticks[-2].isoformat()}" in run.error
    for run in current:
        assert (run.trigger, run.tick, run.missed_ticks) == ("cron", ticks[-1], 0)


def test_two_beats_firing_at_the_same_instant_queue_each_tick_once(
    open_db: Callable[[], Database], schedules: Schedules, clock: Clock
) -> None:
    made = [every_five_minutes(schedules) for _ in range(10)]
    due = made[0][1]
    assert all(d == due for _, d in made)
    clock.set(due + timedelta(seconds=0.5))
    dispatchers = [RecordingDispatcher(), RecordingDispatcher()]
    beats = [make_beat(open_db(), d, clock) for d in dispatchers]  # separate engines, as two processes
    start = threading.Barrier(len(beats))
    queued: list[list[str]] = [[] for _ in beats]
    errors: list[BaseException] = []

    def fire(index: int) -> None:
        try:
            start.wait(5)
            queued[index] = beats[index].fire_due()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=fire, args=(i,)) for i in range(len(beats))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert errors == []
    runs = all_runs(open_db())
    assert len(runs) == len(made) * len(TARGETS)
    assert len({r.idempotency_key for r in runs}) == len(runs)
    assert {(r.schedule_id, r.target) for r in runs} == {(s, t) for s, _ in made for t in TARGETS}
    assert not set(queued[0]) & set(queued[1])
    assert sorted(queued[0] + queued[1]) == sorted(r.id for r in runs)
    assert sorted(dispatchers[0].dispatched + dispatchers[1].dispatched) == sorted(r.id for r in runs)
    assert beats[0].fire_due() == beats[1].fire_due() == []


def test_a_disabled_schedule_never_fires(schedules: Schedules, beat: Beat, db: Database, clock: Clock) -> None:
    detail = schedules.create(NewSchedule(cron="*/5 * * * *", prompt="report", targets=TARGETS, enabled=False))
    assert detail.schedule.next_fire_at is None
    assert detail.next_fires == []
    for hours in (1, 24, 24 * 7):
        clock.set(detail.schedule.created_at + timedelta(hours=hours))
        assert beat.fire_due() == []
    assert all_runs(db) == []


def test_re_enabling_starts_from_now_without_catching_up_the_disabled_period(
    schedules: Schedules, beat: Beat, db: Database, clock: Clock, dispatcher: RecordingDispatcher
) -> None:
    schedule_id, due = every_five_minutes(schedules)
    schedules.update(schedule_id, ScheduleChanges(enabled=False))
    assert schedules.get(schedule_id).schedule.next_fire_at is None
    clock.set(due + timedelta(hours=3, minutes=1))
    assert beat.fire_due() == []

    enabled_at = clock.now
    detail = schedules.update(schedule_id, ScheduleChanges(enabled=True))

    next_fire = detail.schedule.next_fire_at
    assert next_fire == datetime(2025, 1, 6, 13, 10, tzinfo=UTC)  # the first fire after now, not the old due one
    assert next_fire > enabled_at
    assert beat.fire_due() == []
    clock.set(next_fire + timedelta(seconds=0.5))
    queued = beat.fire_due()
    runs = all_runs(db, schedule_id)
    assert sorted(queued) == sorted(r.id for r in runs) == sorted(dispatcher.dispatched)
    assert [(r.target, r.trigger, r.tick, r.missed_ticks) for r in runs] == [(t, "cron", next_fire, 0) for t in TARGETS]


def test_a_restarted_embedded_beat_resends_runs_waiting_to_retry(
    schedules: Schedules, beat: Beat, db: Database, clock: Clock, dispatcher: RecordingDispatcher
) -> None:
    schedule_id, _ = every_five_minutes(schedules)
    waiting, fresh = (r.id for r in schedules.trigger(schedule_id))
    with db.write() as session:  # the previous process held `waiting`'s retry timer when it stopped
        session.execute(
            update(RunRow)
            .where(RunRow.id == waiting)
            .values(attempts=1, retry_at=clock.now + timedelta(seconds=30), error="attempt 1 of 6 failed")
        )
    dispatcher.dispatched.clear()
    clock.advance(seconds=1)

    assert beat.requeue_stale() == []  # a periodic sweep leaves both: sent recently, the retry is ahead
    assert sorted(beat.requeue_stale(every_queued=True)) == sorted([waiting, fresh])  # a new process: every one
    assert sorted(dispatcher.dispatched) == sorted([waiting, fresh])


def test_a_trigger_the_queue_cannot_take_is_reported_pending_with_the_reason(
    schedules: Schedules, beat: Beat, db: Database, clock: Clock, dispatcher: RecordingDispatcher
) -> None:
    """Issue 15: a trigger during a Redis outage answered `queued` although nothing reached the queue."""
    schedule_id, _ = every_five_minutes(schedules)
    dispatcher.unreachable = "the queue (Redis) cannot be reached: Connection refused"
    runs = schedules.trigger(schedule_id)
    assert {r.state for r in runs} == {"pending"}
    assert all("Redis" in r.error for r in runs)
    assert {r.state for r in all_runs(db, schedule_id)} == {"queued"}  # kept in SQL for the sweep
    dispatcher.unreachable = ""
    clock.advance(seconds=3600)
    assert sorted(beat.requeue_stale()) == sorted(r.id for r in runs)  # sent once the queue is back
    assert {r.state for r in schedules.trigger(schedule_id)} == {"queued"}
