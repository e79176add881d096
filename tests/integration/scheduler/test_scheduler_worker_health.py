"""Celery's health as `jarvis_check_status` sees it: a real worker answers a ping through the scheduler's Redis."""

from __future__ import annotations

from pathlib import Path

import pytest

from jarvis.aggregator import probes
from jarvis.aggregator.gateways.scheduler import SchedulerGateway
from tests.integration.scheduler.conftest import Scheduler, base_values
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.anyio


async def test_workers_are_found_by_a_real_ping_and_missed_when_gone(tmp_path: Path, redis: RedisServer) -> None:
    scheduler = Scheduler(tmp_path, base_values(tmp_path, "127.0.0.1:1", redis.url), redis)
    scheduler.serve()
    assert scheduler.api is not None
    client = SchedulerGateway(f"127.0.0.1:{scheduler.api.port}")
    try:
        none_yet = await probes.celery_via_scheduler(client)
        assert none_yet["ok"] is False
        assert "no Celery worker answered" in none_yet["detail"]

        worker = scheduler.celery("worker")
        found = await probes.celery_via_scheduler(client)
        assert found["ok"] is True, found
        assert found["workers"] == 1

        worker.stop()
        gone = await probes.celery_via_scheduler(client)
        assert gone["ok"] is False

        redis.stop()  # the broker itself down: said so, within the probe's bound
        try:
            down = await probes.within(6, "scheduler", probes.celery_via_scheduler(client))
            assert down["ok"] is False
            assert "Redis" in down["detail"]
        finally:
            redis.start()
    finally:
        await client.close()
        scheduler.close()


async def test_an_embedded_scheduler_needs_no_workers(tmp_path: Path) -> None:
    scheduler = Scheduler(tmp_path, base_values(tmp_path, "127.0.0.1:1", ""), None)
    scheduler.serve()
    assert scheduler.api is not None
    client = SchedulerGateway(f"127.0.0.1:{scheduler.api.port}")
    try:
        answer = await probes.celery_via_scheduler(client)
        assert answer["ok"] is None
        assert "embedded" in answer["detail"]
    finally:
        await client.close()
        scheduler.close()
