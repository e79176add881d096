"""Traces across the scheduler (issue 50, decision 0066): a schedule's fire in Celery beat, the run's task in a
Celery worker, and the session that task spawns in the runtime are one trace, and the agent's process is given that
trace in its environment (TRACEPARENT). Each service is a process of its own, as a team deploys them, on a real Redis
and the real Docker engine with the fake-agent image; the spans arrive as real OTLP/HTTP
(tests/support/otlp_receiver.py)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import grpc
import pytest

from jarvis.api.runtime.v1 import runtime_pb2 as rpb
from jarvis.api.runtime.v1 import runtime_pb2_grpc as rpb_grpc
from jarvis.api.scheduler.v1 import scheduler_pb2 as spb
from jarvis.api.scheduler.v1 import scheduler_pb2_grpc as spb_grpc
from jarvis.common.grpc_client import sync_channel
from jarvis.common.internal_plane import InternalPlane
from tests.e2e.orchestrator.conftest import runtime_env
from tests.support.docker_env import remove_instance
from tests.support.otlp_receiver import ReceivedSpan, Receiver, otlp_receiver
from tests.support.redis_server import redis_url
from tests.support.runtime_service import TEST_SECRETS_KEY
from tests.support.scheduler_env import wait_for
from tests.support.stack import free_port, stop_processes

PRODUCER, CONSUMER, SERVER_KIND, CLIENT_KIND = 4, 5, 2, 3  # OTLP's SpanKind numbers
SPAWN_SERVED = "jarvis.api.runtime.v1.RuntimeService/SpawnSession"
PROMPT = "sleep 60"  # the fake agent works that long: its process is there to be looked at
# Read the agent's environment from inside its container, as the agent's user (container exec).
AGENT_TRACE = "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done 2>/dev/null | grep ^TRACEPARENT= | sort -u"


@dataclass
class Deployment:
    receiver: Receiver
    runtime: rpb_grpc.RuntimeServiceStub
    scheduler: spb_grpc.SchedulerServiceStub
    log: Path


@pytest.fixture
def deployment(tmp_path: Path, image: str, engine: docker.DockerClient) -> Iterator[Deployment]:
    """Runtime, scheduler API, Celery worker and beat, each `jarvis serve <service>`, all exporting traces."""
    plane = InternalPlane(token=secrets.token_hex(32))
    target = {name: f"127.0.0.1:{free_port()}" for name in ("runtime", "scheduler")}
    instance = f"traced-{secrets.token_hex(3)}"
    with otlp_receiver() as receiver, redis_url(tmp_path / "redis") as redis:
        env = {
            **os.environ,
            **runtime_env(image, tmp_path / "home"),
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "JARVIS_LOG_JSON": "false",
            "JARVIS_INTERNAL_TOKEN": plane.token or "",
            "JARVIS_RUNTIME_DATA_DIR": str(tmp_path / "runtime"),
            "JARVIS_RUNTIME_LISTEN": target["runtime"],
            "JARVIS_RUNTIME_SECRETS_KEY": TEST_SECRETS_KEY,
            "JARVIS_RUNTIME_INSTANCE": instance,
            "JARVIS_SCHEDULER_DATABASE_URL": f"sqlite:///{tmp_path / 'scheduler.db'}",
            "JARVIS_SCHEDULER_LISTEN": target["scheduler"],
            "JARVIS_SCHEDULER_RUNTIME_TARGET": target["runtime"],
            "JARVIS_SCHEDULER_REDIS_URL": redis,
            "JARVIS_SCHEDULER_QUEUE": f"q-{secrets.token_hex(4)}",
            "JARVIS_SCHEDULER_MIN_INTERVAL_SECONDS": "1",
            "JARVIS_SCHEDULER_BEAT_INTERVAL_SECONDS": "0.2",
        }
        log = tmp_path / "processes.log"
        with log.open("ab") as out:
            processes = [
                subprocess.Popen(
                    [sys.executable, "-m", "jarvis.cli", "serve", service],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd=tmp_path,
                )
                for service in ("runtime", "scheduler", "scheduler-worker", "scheduler-beat")
            ]
        channels = [sync_channel(target[name], {}, plane) for name in ("runtime", "scheduler")]
        try:
            yield Deployment(
                receiver,
                rpb_grpc.RuntimeServiceStub(channels[0]),
                spb_grpc.SchedulerServiceStub(channels[1]),
                log,
            )
        finally:
            for channel in channels:
                channel.close()
            stop_processes(processes)
            remove_instance(engine, instance)


def answered(call: Any, request: Any, log: Path) -> Any:
    """`call`'s answer once its service serves (the processes start in parallel)."""

    def attempt() -> Any:
        try:
            return call(request, timeout=60)
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.UNAVAILABLE:
                raise
            return None

    return wait_for(attempt, 120, lambda: log.read_text(errors="replace")[-4000:])


def only(spans: list[ReceivedSpan], name: str, kind: int) -> ReceivedSpan:
    found = [s for s in spans if s.name == name and s.kind == kind]
    assert len(found) == 1, (name, [(s.name, s.kind, s.service) for s in spans])
    return found[0]


def test_a_fire_its_task_and_the_session_it_spawns_are_one_trace(deployment: Deployment) -> None:
    receiver, log = deployment.receiver, deployment.log
    project = answered(deployment.runtime.CreateProject, rpb.CreateProjectRequest(name="traced"), log).id
    # Every two seconds; the agent's first run outlasts the next fires, which are skipped (concurrency "skip").
    create = spb.CreateScheduleRequest(cron="* * * * * */2", prompt=PROMPT, targets=[project])
    schedule = answered(deployment.scheduler.CreateSchedule, create, log).schedule

    def spawned() -> Any:
        runs = deployment.scheduler.ListRuns(spb.ListRunsRequest(schedule_id=schedule.id), timeout=30).runs
        return next((r for r in runs if r.session_id), None)

    run = wait_for(spawned, 120, lambda: log.read_text(errors="replace")[-4000:])
    deployment.scheduler.UpdateSchedule(spb.UpdateScheduleRequest(schedule_id=schedule.id, enabled=False), timeout=30)

    def spawn_served() -> ReceivedSpan | None:
        with receiver.lock:
            spans = list(receiver.spans)
        return next((s for s in spans if s.name == SPAWN_SERVED and s.service == "jarvis-runtime"), None)

    served = wait_for(spawn_served, 30, lambda: str([s.name for s in receiver.spans]))
    trace_id = served.trace_id
    # The agent's process has the trace, under the runtime's span for its spawn: an agent whose calls back into
    # Jarvis send it makes them part of this trace.
    ran = deployment.runtime.Exec(rpb.ExecRequest(project_id=project, command=AGENT_TRACE), timeout=60)
    _, version, sent_trace, sent_parent, flags = ran.stdout.strip().replace("=", "-").split("-")
    assert (version, sent_trace, sent_parent) == ("00", trace_id, served.span_id), (ran.stdout, ran.stderr)
    assert int(flags, 16) & 1  # sampled

    # The run's span lasts as long as the run: ended now, it is sent with the rest of the chain.
    ending = rpb.SessionRef(project_id=project, session_id=run.session_id, force=True)
    deployment.runtime.EndSession(ending, timeout=60)
    spans = receiver.wait_for(lambda s: any(x.name == "scheduler run" for x in s), trace_id, timeout=60)
    fire = only(spans, "schedule fire", PRODUCER)
    assert (fire.parent_id, fire.service) == ("", "jarvis-scheduler-beat")  # the fire begins the trace
    assert fire.attributes["jarvis.schedule.id"] == schedule.id
    task = only(spans, "scheduler run", CONSUMER)
    assert (task.parent_id, task.service) == (fire.span_id, "jarvis-scheduler-worker")  # carried by Celery
    assert task.attributes["jarvis.run.id"] == run.id
    spawn = only(spans, "runtime/SpawnSession", CLIENT_KIND)
    assert (spawn.parent_id, spawn.service) == (task.span_id, "jarvis-scheduler-worker")
    assert served.parent_id == spawn.span_id
    assert not any(PROMPT in json.dumps(s.attributes) for s in spans)  # no prompt in any attribute
