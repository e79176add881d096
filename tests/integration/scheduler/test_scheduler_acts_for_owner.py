"""Runs of a signed-in person's schedule act for them (issue 31 item 4, decision 0057), through real Celery worker
processes on a real Redis, a real registry served on port 0 and a runtime on the Docker engine: the worker stores the
run's credential in the registry (kind `agent`: the person, the project, the run's session) and revokes it when the
run ends; a disabled owner's run does not start and says why; a token's schedule acts for no one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from jarvis.api.registry.v1 import oauth_pb2 as opb
from jarvis.api.registry.v1 import oauth_pb2_grpc as opb_grpc
from jarvis.api.scheduler.v1 import scheduler_pb2 as pb
from jarvis.common.grpc_server import create_server
from jarvis.registry.server import open_registry, registry_bindings
from jarvis.registry.settings import RegistrySettings
from tests.integration.scheduler.conftest import Runtime, Scheduler, base_values
from tests.support.redis_server import RedisServer
from tests.support.scheduler_env import wait_for

ALICE = "alice@example.test (user:alice)"


class Registry:
    def __init__(self, target: str, stub: opb_grpc.OAuthStateServiceStub) -> None:
        self.target = target
        self.stub = stub

    def person(self, subject: str, email: str, disabled: bool) -> None:
        body = {"subject": subject, "email": email, "groups": [], "disabled": disabled}
        self.stub.PutRecord(opb.OAuthRecord(kind="user", key=subject, body_json=json.dumps(body)), timeout=10)

    def credentials(self) -> list[dict[str, Any]]:
        records = self.stub.ListRecords(opb.ListOAuthRecordsRequest(kind="agent"), timeout=10).records
        return [json.loads(r.body_json) for r in records]


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    settings = RegistrySettings(
        data_dir=tmp_path / "registry", home=tmp_path, database_url=f"sqlite:///{tmp_path / 'registry.db'}"
    )
    opened = open_registry(settings)
    running = create_server(registry_bindings(opened, [tmp_path]), "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{running.port}")
    try:
        yield Registry(f"127.0.0.1:{running.port}", opb_grpc.OAuthStateServiceStub(channel))
    finally:
        channel.close()
        running.stop(0)
        opened.close()


@pytest.fixture
def acting_scheduler(tmp_path: Path, runtime: Runtime, redis: RedisServer, registry: Registry) -> Iterator[Scheduler]:
    values = base_values(tmp_path, runtime.target, redis.url, registry_target=registry.target)
    scheduler = Scheduler(tmp_path, values, redis)
    scheduler.serve()
    yield scheduler
    scheduler.close()


def trigger(scheduler: Scheduler, schedule_id: str) -> pb.Run:
    assert scheduler.stub is not None
    runs: list[pb.Run] = list(scheduler.stub.TriggerSchedule(pb.ScheduleRef(schedule_id=schedule_id), timeout=30).runs)
    assert len(runs) == 1
    return runs[0]


def test_a_persons_scheduled_run_carries_their_credential_until_it_ends(
    acting_scheduler: Scheduler, runtime: Runtime, registry: Registry
) -> None:
    registry.person("alice", "alice@example.test", disabled=False)
    project = runtime.project("acting")
    schedule = acting_scheduler.create([project], prompt="sleep 3", created_by=ALICE)
    acting_scheduler.celery("worker")
    run = trigger(acting_scheduler, schedule.id)

    running = acting_scheduler.wait_run(schedule.id, run.id, states=("running",))
    held = wait_for(lambda: registry.credentials() or None, 30, "no credential for the run")
    assert held == [
        {
            "subject": "alice",
            "project_id": project,
            "session_id": held[0]["session_id"],
            "run_id": run.id,
            "issued_at": held[0]["issued_at"],
        }
    ]
    done = acting_scheduler.wait_run(schedule.id, run.id)
    assert done.state == "succeeded", done.error
    assert done.session_id == held[0]["session_id"] == (running.session_id or done.session_id)
    assert registry.credentials() == []  # revoked with its run


def test_a_disabled_owners_run_does_not_start_and_says_why(
    acting_scheduler: Scheduler, runtime: Runtime, registry: Registry
) -> None:
    registry.person("alice", "alice@example.test", disabled=True)
    project = runtime.project("refused")
    schedule = acting_scheduler.create([project], prompt="hello", created_by=ALICE)
    acting_scheduler.celery("worker")
    done = acting_scheduler.wait_run(schedule.id, trigger(acting_scheduler, schedule.id).id)
    assert done.state == "failed"
    assert "owner alice@example.test is disabled" in done.error
    assert runtime.sessions(project) == []
    assert registry.credentials() == []


def test_a_tokens_schedule_acts_for_no_one(acting_scheduler: Scheduler, runtime: Runtime, registry: Registry) -> None:
    project = runtime.project("machine")
    schedule = acting_scheduler.create([project], prompt="hello", created_by="ci (tok_1)")
    acting_scheduler.celery("worker")
    done = acting_scheduler.wait_run(schedule.id, trigger(acting_scheduler, schedule.id).id)
    assert done.state == "succeeded", done.error
    assert registry.credentials() == []
