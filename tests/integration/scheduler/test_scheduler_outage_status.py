"""A Redis outage as the operator and the agent see it (issue 15): `jarvis serve registry` and `jarvis serve
aggregator` processes in front of a Celery-mode scheduler whose Redis the test stops. `jarvis_check_status`
says the queue is down, and a trigger during the outage is reported `pending` with the reason."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.scheduler.conftest import Runtime, Scheduler
from tests.support.redis_server import RedisServer
from tests.support.stack import free_port, mcp_client, result_json, wait_for_url

pytestmark = pytest.mark.anyio


def _serve(service: str, log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("JARVIS_") and k != "DATABASE_URL"}
    return subprocess.Popen(
        [sys.executable, "-m", "jarvis.cli", "serve", service],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        env={**clean, "JARVIS_LOG_LEVEL": "WARNING", **env},
    )


@pytest.fixture
def aggregator_url(tmp_path: Path, celery_scheduler: Scheduler) -> Iterator[str]:
    """A registry and an aggregator process, the aggregator pointed at the test's scheduler API."""
    assert celery_scheduler.api is not None
    registry_port, port = free_port(), free_port()
    registry = _serve(
        "registry",
        tmp_path / "registry.log",
        {
            "HOME": str(tmp_path),
            "JARVIS_REGISTRY_DATA_DIR": str(tmp_path / "registry"),
            "JARVIS_REGISTRY_DATABASE_URL": f"sqlite:///{tmp_path / 'registry.db'}",
            "JARVIS_REGISTRY_LISTEN": f"127.0.0.1:{registry_port}",
        },
    )
    aggregator = _serve(
        "aggregator",
        tmp_path / "aggregator.log",
        {
            "HOME": str(tmp_path),
            "JARVIS_AGGREGATOR_PORT": str(port),
            "JARVIS_AGGREGATOR_REGISTRY_TARGET": f"127.0.0.1:{registry_port}",
            "JARVIS_AGGREGATOR_SCHEDULER_TARGET": f"127.0.0.1:{celery_scheduler.api.port}",
        },
    )
    try:
        wait_for_url(f"http://127.0.0.1:{port}/healthz", timeout=90)
        yield f"http://127.0.0.1:{port}"
    finally:
        for process in (aggregator, registry):
            process.terminate()
            process.wait(15)


async def test_outage_shows_in_status_and_a_trigger_is_pending_with_the_reason(
    aggregator_url: str, celery_scheduler: Scheduler, runtime: Runtime, redis: RedisServer
) -> None:
    schedule = celery_scheduler.create([runtime.project("outage-status")], enabled=False, prompt="during")
    async with mcp_client(f"{aggregator_url}/mcp/jarvis") as jarvis:
        before = result_json(await jarvis.call_tool("jarvis_check_status", {}))["services"]["scheduler"]
        assert before["ok"] is True, before
        assert before["queue_depth"] >= 0
        redis.stop()
        try:
            status = result_json(await jarvis.call_tool("jarvis_check_status", {}))
            async with mcp_client(f"{aggregator_url}/mcp/orchestrator") as orchestrator:
                triggered = result_json(
                    await orchestrator.call_tool("schedule", {"action": "trigger", "schedule_id": schedule.id})
                )
        finally:
            redis.start()
        after = result_json(await jarvis.call_tool("jarvis_check_status", {}))["services"]["scheduler"]
    scheduler = status["services"]["scheduler"]
    assert scheduler["ok"] is False
    assert "Redis" in scheduler["detail"]
    assert status["healthy"] is False
    (run,) = triggered["runs"]
    assert run["state"] == "pending"
    assert "Redis" in run["error"]
    assert after["ok"] is True, after
    # Kept in SQL all along, for beat's sweep to send.
    assert [r.state for r in celery_scheduler.runs(schedule.id)] == ["queued"]
