"""The scheduler against real things: a runtime on the Docker engine, Redis, Celery worker and beat processes."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import grpc
import pytest

from jarvis.api.runtime.v1 import runtime_pb2 as rpb
from jarvis.api.runtime.v1 import runtime_pb2_grpc as rpb_grpc
from jarvis.api.scheduler.v1 import scheduler_pb2 as pb
from jarvis.api.scheduler.v1 import scheduler_pb2_grpc as pb_grpc
from jarvis.common.service import RunningService, launch
from jarvis.runtime.server import serve_runtime
from jarvis.scheduler.server import build
from jarvis.scheduler.settings import SchedulerSettings
from tests.support.docker_env import remove_instance
from tests.support.redis_server import RedisServer
from tests.support.runtime_service import runtime_settings
from tests.support.scheduler_env import CeleryProcess, scheduler_env, wait_for

FINISHED = ("succeeded", "failed", "skipped", "missed")


@dataclass
class Runtime:
    target: str
    stub: rpb_grpc.RuntimeServiceStub

    def project(self, name: str) -> str:
        return str(self.stub.CreateProject(rpb.CreateProjectRequest(name=name), timeout=60).id)

    def sessions(self, project_id: str) -> list[rpb.Session]:
        return list(self.stub.ListSessions(rpb.ProjectRef(project_id=project_id), timeout=30).sessions)


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory, image: str, engine: docker.DockerClient) -> Iterator[Runtime]:
    settings = runtime_settings(tmp_path_factory.mktemp("runtime"), image)
    service, server = serve_runtime(settings, None, "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        yield Runtime(f"127.0.0.1:{server.port}", rpb_grpc.RuntimeServiceStub(channel))
    finally:
        channel.close()
        server.stop(1)
        service.close()
        remove_instance(engine, settings.instance)


@dataclass
class Scheduler:
    """One scheduler deployment: its database, its queue on Redis, the API served here, Celery processes."""

    tmp: Path
    values: dict[str, Any]
    redis: RedisServer | None
    api: RunningService | None = None
    stub: pb_grpc.SchedulerServiceStub | None = None
    processes: list[CeleryProcess] = field(default_factory=list)
    _channel: grpc.Channel | None = None

    def settings(self) -> SchedulerSettings:
        return SchedulerSettings(**self.values)

    def serve(self) -> pb_grpc.SchedulerServiceStub:
        self.api = launch(build, self.settings(), "127.0.0.1:0")
        self._channel = grpc.insecure_channel(f"127.0.0.1:{self.api.port}")
        self.stub = pb_grpc.SchedulerServiceStub(self._channel)
        return self.stub

    def celery(self, kind: str, name: str = "") -> CeleryProcess:
        name = name or f"{kind}{len(self.processes)}"
        process = CeleryProcess(kind, scheduler_env(self.values), self.tmp / f"{name}.log", name)
        self.processes.append(process)
        process.wait_ready()
        return process

    def create(self, targets: list[str], cron: str = "0 3 * * *", prompt: str = "hello", **fields: Any) -> pb.Schedule:
        assert self.stub is not None
        request = pb.CreateScheduleRequest(cron=cron, prompt=prompt, targets=targets, **fields)
        detail: pb.ScheduleDetail = self.stub.CreateSchedule(request, timeout=30)
        return detail.schedule

    def runs(self, schedule_id: str, state: str = "") -> list[pb.Run]:
        assert self.stub is not None
        return list(
            self.stub.ListRuns(pb.ListRunsRequest(schedule_id=schedule_id, state=state, limit=500), timeout=30).runs
        )

    def wait_run(
        self, schedule_id: str, run_id: str, states: tuple[str, ...] = FINISHED, timeout: float = 60
    ) -> pb.Run:
        def probe() -> pb.Run | None:
            found = [r for r in self.runs(schedule_id) if r.id == run_id and r.state in states]
            return found[0] if found else None

        return wait_for(
            probe, timeout, lambda: f"run {run_id} not in {states}: {self.runs(schedule_id)}\n" + self.logs()
        )

    def logs(self) -> str:
        return "\n".join(f"--- {p.kind} {p.log_path.name}\n{p.output()[-4000:]}" for p in self.processes)

    def close(self) -> None:
        for process in self.processes:
            process.stop()
        if self._channel is not None:
            self._channel.close()
        if self.api is not None:
            self.api.stop(1)


def base_values(tmp: Path, runtime_target: str, redis_url: str, **overrides: Any) -> dict[str, Any]:
    """Settings for quick tests: seconds-level crons allowed, short heartbeats, leases and timeouts."""
    values: dict[str, Any] = {
        "data_dir": tmp / "scheduler",
        "database_url": f"sqlite:///{tmp / 'scheduler.db'}",
        "runtime_target": runtime_target,
        "redis_url": redis_url,
        "queue": f"q-{secrets.token_hex(4)}",
        "min_interval_seconds": 1,
        "beat_interval_seconds": 0.2,
        "beat_lock_ttl_seconds": 3,
        "heartbeat_seconds": 1,
        "sweep_seconds": 2,
        "requeue_after_seconds": 5,
        "run_timeout_seconds": 30,
        "visibility_timeout_seconds": 40,
        "retry_base_seconds": 0.3,
        "retry_cap_seconds": 1,
        "retry_max": 2,
        "queue_poll_seconds": 0.5,
        "misfire_grace_seconds": 5,
    }
    values.update(overrides)
    return values


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def celery_scheduler(tmp_path: Path, runtime: Runtime, redis: RedisServer) -> Iterator[Scheduler]:
    """Celery mode: the API here; the test starts the worker and beat processes it needs."""
    scheduler = Scheduler(tmp_path, base_values(tmp_path, runtime.target, redis.url), redis)
    scheduler.serve()
    yield scheduler
    scheduler.close()


@pytest.fixture
def embedded_scheduler(tmp_path: Path, runtime: Runtime) -> Iterator[Scheduler]:
    """Embedded mode: no Redis; the in-process timer and thread pool run schedules."""
    scheduler = Scheduler(tmp_path, base_values(tmp_path, runtime.target, ""), None)
    scheduler.serve()
    yield scheduler
    scheduler.close()
