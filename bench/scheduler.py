"""Scheduler figures with real processes: a runtime on the local Docker engine (DOCKER_HOST, fake-agent image),
Redis, Celery beat and worker processes, and the scheduler's gRPC API served here.

1. Beat CPU: one `celery beat` over N enabled schedules none of which is due (their fires are hours away),
   CPU seconds per minute from /proc; baseline in the same run: the same beat over 0 schedules.
2. Fire-to-session-start: K schedules with a seconds-level cron fire for a while through beat and one
   worker (threads pool); p50/p99 of session_started_at - tick (target p50 < 2 s) and of queued_at - tick
   (beat's lag), read back through ListRuns. The N idle schedules of part 1 stay in the database.
3. TriggerSchedule calls/s over gRPC, sequential and from 8 threads, against GetSchedule (a read of the
   same service) in the same run. Its queue has no worker; deleting the schedule skips the queued runs.

Timings are the production defaults (beat every 1 s, sweep every 15 s) except that crons may have a
sixth (seconds) field. `--database-url` must name an empty scratch database (its scheduler tables keep
the bench's runs); without it everything runs on a temporary SQLite file.

Run: eval "$(scripts/dockerd)" && .venv/bin/python bench/scheduler.py [--schedules 1000] [--seconds 60]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import grpc  # noqa: E402
from google.protobuf.timestamp_pb2 import Timestamp  # noqa: E402
from sqlalchemy import func, select  # noqa: E402

from jarvis.api.runtime.v1 import runtime_pb2 as rpb  # noqa: E402
from jarvis.api.runtime.v1 import runtime_pb2_grpc as rpb_grpc  # noqa: E402
from jarvis.api.scheduler.v1 import scheduler_pb2 as pb  # noqa: E402
from jarvis.common.sql.database import Database  # noqa: E402
from jarvis.runtime.server import serve_runtime  # noqa: E402
from jarvis.scheduler.domain.cron import Cron  # noqa: E402
from jarvis.scheduler.domain.rows import new_id  # noqa: E402
from jarvis.scheduler.storage.migrate import MIGRATIONS  # noqa: E402
from jarvis.scheduler.storage.models import ScheduleRow  # noqa: E402
from tests.integration.scheduler.conftest import FINISHED, Runtime, Scheduler, base_values  # noqa: E402
from tests.support.docker_env import agent_image, docker_client, remove_instance  # noqa: E402
from tests.support.redis_server import RedisServer  # noqa: E402
from tests.support.runtime_service import runtime_settings  # noqa: E402
from tests.support.scheduler_env import wait_for  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
BEAT_WARMUP_SECONDS = 3.0  # the first tick opens the database and runs the migrations: not what is measured
FIRE_EVERY_SECONDS = 10
THREADS = 8
WARMUP_CALLS = 5


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process (the fields after the parenthesised command name)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def production_timings(values: dict[str, Any], beat_interval: float) -> dict[str, Any]:
    """base_values's quick-test timings back to the defaults that shape beat's work and a run's latency."""
    return {
        **values,
        "beat_interval_seconds": beat_interval,
        "sweep_seconds": 15.0,
        "heartbeat_seconds": 5.0,
        "beat_lock_ttl_seconds": 15.0,
        "requeue_after_seconds": 300,
        "misfire_grace_seconds": 60,
        "queue_poll_seconds": 10.0,
    }


def idle_schedules(database_url: str, target: str, count: int) -> None:
    """`count` enabled schedules, straight into the table, every fire 11 to 13 hours from now."""
    hour = (datetime.now(UTC).hour + 12) % 24
    now = datetime.now(UTC)
    rows = []
    for i in range(count):
        cron = Cron(f"{i % 60} {hour} * * *", "UTC")
        rows.append(
            ScheduleRow(
                id=new_id("sch"),
                name=f"idle-{i}",
                cron=cron.expression,
                timezone="UTC",
                prompt=f"idle {i}",
                targets=[target],
                enabled=True,
                concurrency="skip",
                missed="run_once",
                created_by="bench",
                created_at=now,
                updated_at=now,
                next_fire_at=cron.next_after(now),
            )
        )
    db = Database.from_url(database_url)
    try:
        with db.write() as session:
            session.add_all(rows)
    finally:
        db.close()


def schedule_count(database_url: str) -> int:
    db = Database.from_url(database_url)
    try:
        MIGRATIONS.upgrade_to_head(db.engine)
        with db.read() as session:
            return int(session.scalar(select(func.count()).select_from(ScheduleRow)) or 0)
    finally:
        db.close()


def beat_cpu(scheduler: Scheduler, name: str, seconds: float) -> float:
    """CPU seconds per minute of one beat process over `seconds`, after its warm-up."""
    beat = scheduler.celery("beat", name)
    try:
        time.sleep(BEAT_WARMUP_SECONDS)
        before, started = cpu_seconds(beat.process.pid), time.monotonic()
        time.sleep(seconds)
        used, elapsed = cpu_seconds(beat.process.pid) - before, time.monotonic() - started
        if beat.process.poll() is not None:
            raise RuntimeError(f"beat exited:\n{beat.output()[-3000:]}")
    finally:
        beat.stop()
    return used / elapsed * 60


def seconds_between(later: Timestamp, earlier: Timestamp) -> float:
    return (later.ToDatetime() - earlier.ToDatetime()).total_seconds()


def fire_latency(
    scheduler: Scheduler, runtime: Runtime, project: str, count: int, seconds: float
) -> tuple[list[float], list[float], Counter[str]]:
    """Session-start and beat-lag seconds of every run of `count` staggered schedules firing for `seconds`."""
    assert scheduler.stub is not None
    stub = scheduler.stub
    scheduler.celery("worker", "worker")
    scheduler.celery("beat", "fire-beat")
    # Warm the worker (its core and runtime channel) and the project's container outside the figures.
    warm = scheduler.create([project], prompt="warm up")
    (run,) = stub.TriggerSchedule(pb.ScheduleRef(schedule_id=warm.id), timeout=30).runs
    done = scheduler.wait_run(warm.id, run.id, timeout=120)
    if done.state != "succeeded":
        raise RuntimeError(f"warm-up run {done.state}: {done.error}")
    stub.DeleteSchedule(pb.ScheduleRef(schedule_id=warm.id), timeout=30)

    # Spread over the period so each second has the same number of fires: two a second for 20 schedules.
    ids = []
    for i in range(count):
        offset = i * FIRE_EVERY_SECONDS // count
        second_field = ",".join(str(s) for s in range(offset, 60, FIRE_EVERY_SECONDS))
        ids.append(scheduler.create([project], cron=f"* * * * * {second_field}", prompt=f"fire {i}").id)
    time.sleep(seconds)
    for schedule_id in ids:
        stub.UpdateSchedule(pb.UpdateScheduleRequest(schedule_id=schedule_id, enabled=False), timeout=30)

    def settled() -> list[pb.Run] | None:
        runs = [r for schedule_id in ids for r in scheduler.runs(schedule_id)]
        return runs if all(r.state in FINISHED for r in runs) else None

    runs = wait_for(settled, 120, scheduler.logs)
    for schedule_id in ids:
        stub.DeleteSchedule(pb.ScheduleRef(schedule_id=schedule_id), timeout=30)
    started = [seconds_between(r.session_started_at, r.tick) for r in runs if r.HasField("session_started_at")]
    lag = [seconds_between(r.queued_at, r.tick) for r in runs]
    return started, lag, Counter(r.state for r in runs)


class Rate:
    def __init__(self, label: str, calls: int, seconds: float, latencies_ms: list[float], errors: int) -> None:
        self.label, self.calls, self.seconds = label, calls, seconds
        self.latencies_ms, self.errors = latencies_ms, errors

    @property
    def per_second(self) -> float:
        return self.calls / self.seconds

    def line(self) -> str:
        return (
            f"  {self.label:<34} {self.per_second:8.1f} calls/s   p50 {pct(self.latencies_ms, 0.5):7.2f} ms   "
            f"p99 {pct(self.latencies_ms, 0.99):7.2f} ms   errors {self.errors}"
        )


def hammer(label: str, call: Callable[[], object], threads: int, seconds: float) -> Rate:
    """`threads` threads calling `call` back to back for `seconds`."""
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    for _ in range(WARMUP_CALLS):
        call()
    deadline = time.monotonic() + seconds

    def loop() -> None:
        nonlocal errors
        mine: list[float] = []
        failed = 0
        while time.monotonic() < deadline:
            started = time.perf_counter()
            try:
                call()
            except grpc.RpcError:
                failed += 1
            mine.append((time.perf_counter() - started) * 1000)
        with lock:
            latencies.extend(mine)
            errors += failed

    started = time.monotonic()
    workers = [threading.Thread(target=loop) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return Rate(label, len(latencies), time.monotonic() - started, latencies, errors)


def trigger_rates(scheduler: Scheduler, project: str, seconds: float) -> tuple[list[Rate], Rate, int]:
    """Reads first (the schedule has no runs yet), then triggers, then a read again over the runs they queued."""
    assert scheduler.stub is not None
    stub = scheduler.stub
    ref = pb.ScheduleRef(schedule_id=scheduler.create([project], prompt="triggered").id)

    def read() -> object:
        return stub.GetSchedule(ref, timeout=30)

    def trigger() -> object:
        return stub.TriggerSchedule(ref, timeout=30)

    reads = [hammer(f"GetSchedule, {n} thread(s)", read, n, seconds) for n in (1, THREADS)]
    triggers = [hammer(f"TriggerSchedule, {n} thread(s)", trigger, n, seconds) for n in (1, THREADS)]
    queued = sum(r.calls + WARMUP_CALLS for r in triggers)
    read_after = hammer(f"GetSchedule after {queued} runs, 1 thread", read, 1, seconds)
    skipped = stub.DeleteSchedule(ref, timeout=30).queued_runs_skipped
    return [r for pair in zip(reads, triggers, strict=True) for r in pair], read_after, skipped


def main(args: argparse.Namespace) -> None:
    started_at, load_start = time.monotonic(), load()
    engine = docker_client()
    image = agent_image(engine)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        database_url = args.database_url or f"sqlite:///{tmp / 'scheduler.db'}"
        if (existing := schedule_count(database_url)) != 0:
            raise SystemExit(f"{database_url} holds {existing} schedules; the beat baseline needs an empty database")
        redis = RedisServer(tmp / "redis")
        redis.start()
        settings = runtime_settings(tmp / "runtime", image)
        service, server = serve_runtime(settings, None, "127.0.0.1:0")
        channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
        schedulers: list[Scheduler] = []

        def scheduler(name: str) -> Scheduler:
            values = base_values(
                tmp / name, runtime.target, redis.url, database_url=database_url, data_dir=tmp / name / "data"
            )
            made = Scheduler(tmp / name, production_timings(values, args.beat_interval), redis)
            made.tmp.mkdir(parents=True, exist_ok=True)
            schedulers.append(made)
            return made

        try:
            runtime = Runtime(f"127.0.0.1:{server.port}", rpb_grpc.RuntimeServiceStub(channel))
            project = runtime.project("bench-scheduler")
            runtime.stub.StartContainer(rpb.ProjectRef(project_id=project), timeout=120)

            idle = scheduler("idle")
            cpu_empty = beat_cpu(idle, "beat-empty", args.seconds)
            inserting = time.perf_counter()
            idle_schedules(database_url, project, args.schedules)
            insert_seconds = time.perf_counter() - inserting
            cpu_full = beat_cpu(idle, "beat-full", args.seconds)

            firing = scheduler("firing")
            firing.serve()
            session_start, beat_lag, states = fire_latency(
                firing, runtime, project, args.fire_schedules, args.fire_seconds
            )
            firing.close()

            trigger = scheduler("trigger")
            trigger.serve()
            rates, read_after, skipped = trigger_rates(trigger, project, args.rate_seconds)
        finally:
            for made in schedulers:
                made.close()
            channel.close()
            server.stop(1)
            service.close()
            remove_instance(engine, settings.instance)
            redis.stop()

    backend = database_url.split(":", 1)[0]
    print(
        f"load average at start {load_start}, at end {load()} ({os.cpu_count()} CPUs); {backend}; "
        f"beat every {args.beat_interval:g} s"
    )
    print(
        f"1. beat CPU over {args.seconds:g} s, nothing due ({args.schedules} schedules inserted in "
        f"{insert_seconds:.2f} s)"
    )
    print(f"  {'0 schedules (baseline)':<34} {cpu_empty:8.3f} CPU s/min")
    print(
        f"  {f'{args.schedules} enabled schedules':<34} {cpu_full:8.3f} CPU s/min   "
        f"marginal {cpu_full - cpu_empty:+.3f} CPU s/min"
    )
    print(
        f"2. fire to session start: {args.fire_schedules} schedules firing every {FIRE_EVERY_SECONDS} s "
        f"(staggered) for {args.fire_seconds:g} s, one worker (threads), {args.schedules} idle schedules beside"
    )
    print(
        f"  {'session_started_at - tick':<34} p50 {pct(session_start, 0.5):6.2f} s   "
        f"p99 {pct(session_start, 0.99):6.2f} s   max {max(session_start, default=float('nan')):6.2f} s   "
        f"n={len(session_start)}   {'PASS' if pct(session_start, 0.5) < 2 else 'MISS'} (p50 < 2 s)"
    )
    print(
        f"  {'queued_at - tick (beat lag)':<34} p50 {pct(beat_lag, 0.5):6.2f} s   p99 {pct(beat_lag, 0.99):6.2f} s   "
        f"max {max(beat_lag, default=float('nan')):6.2f} s   n={len(beat_lag)}"
    )
    if session_start:
        print(
            f"  {'mean session start':<34} {statistics.mean(session_start):6.2f} s   run states "
            f"{dict(sorted(states.items()))}"
        )
    print(f"3. trigger throughput, one target, {args.rate_seconds:g} s each, API in this process, no worker")
    for rate in rates:
        print(rate.line())
    print(read_after.line())
    for read, write in zip(rates[0::2], rates[1::2], strict=True):
        print(f"  {'trigger / read':<34} {write.per_second / read.per_second:8.2f}x ({read.label.split(', ')[1]})")
    print(f"  deleting the schedule skipped {skipped} queued runs")
    print(f"took {time.monotonic() - started_at:.0f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--schedules", type=int, default=1000, help="idle enabled schedules (part 1)")
    parser.add_argument("--seconds", type=float, default=60, help="beat CPU measure, per configuration")
    parser.add_argument("--database-url", default="", help="an empty scratch database; default: temporary SQLite")
    parser.add_argument("--beat-interval", type=float, default=1.0, help="beat_interval_seconds")
    parser.add_argument("--fire-schedules", type=int, default=20)
    parser.add_argument("--fire-seconds", type=float, default=30)
    parser.add_argument("--rate-seconds", type=float, default=5)
    main(parser.parse_args())
