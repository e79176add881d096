"""Every service as its own process, as a team deploys them, on one service credential: the status is healthy,
with Docker asked through the runtime and Celery through a real worker ping (the aggregator has neither)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

from tests.support.docker_env import docker_host
from tests.support.redis_server import RedisServer
from tests.support.runtime_service import TEST_SECRETS_KEY
from tests.support.stack import free_port, mcp_client, result_json, stop_processes, wait_for_url

pytestmark = pytest.mark.anyio


async def test_every_service_up_is_healthy_and_each_daemon_is_probed_where_it_lives(tmp_path: Path) -> None:
    redis = RedisServer(tmp_path / "redis")
    redis.start()
    ports = {name: free_port() for name in ("registry", "runtime", "scheduler", "debug", "aggregator")}
    target = {name: f"127.0.0.1:{port}" for name, port in ports.items()}
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "JARVIS_LOG_LEVEL": "WARNING",
        "JARVIS_LOG_JSON": "false",
        "JARVIS_INTERNAL_TOKEN": secrets.token_hex(32),
        "DOCKER_HOST": docker_host(),
        "JARVIS_REDIS_URL": redis.url,
        "JARVIS_REGISTRY_DATA_DIR": str(tmp_path / "registry"),
        "JARVIS_REGISTRY_LISTEN": target["registry"],
        "JARVIS_RUNTIME_DATA_DIR": str(tmp_path / "runtime"),
        "JARVIS_RUNTIME_LISTEN": target["runtime"],
        "JARVIS_RUNTIME_SECRETS_KEY": TEST_SECRETS_KEY,
        "JARVIS_SCHEDULER_DATABASE_URL": f"sqlite:///{tmp_path / 'scheduler.db'}",
        "JARVIS_SCHEDULER_LISTEN": target["scheduler"],
        "JARVIS_SCHEDULER_RUNTIME_TARGET": target["runtime"],
        "JARVIS_SCHEDULER_REDIS_URL": redis.url,
        "JARVIS_SCHEDULER_QUEUE": f"q-{secrets.token_hex(4)}",
        "JARVIS_DEBUG_LISTEN": target["debug"],
        "JARVIS_AGGREGATOR_PORT": str(ports["aggregator"]),
        "JARVIS_AGGREGATOR_REGISTRY_TARGET": target["registry"],
        "JARVIS_AGGREGATOR_RUNTIME_TARGET": target["runtime"],
        "JARVIS_AGGREGATOR_SCHEDULER_TARGET": target["scheduler"],
        "JARVIS_AGGREGATOR_DEBUG_TARGET": target["debug"],
    }
    (tmp_path / "registry").mkdir()
    log = (tmp_path / "processes.log").open("ab")
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "jarvis.cli", "serve", service], env=env, stdout=log, stderr=subprocess.STDOUT
        )
        for service in ("registry", "runtime", "scheduler", "scheduler-worker", "debug", "aggregator")
    ]
    base = f"http://127.0.0.1:{ports['aggregator']}"
    try:
        wait_for_url(base + "/readyz", timeout=180)
        ready = httpx2.get(base + "/readyz", timeout=30).json()
        assert ready["checks"] == {
            "registry": True,
            "runtime": True,
            "scheduler": True,
            "debug": True,
            "redis": True,
        }, ready
        async with mcp_client(base + "/mcp/jarvis") as client:
            status: dict[str, object] = {}
            for _ in range(60):  # the worker joins the broker a little after its process starts
                status = result_json(await client.call_tool("jarvis_check_status", {}))
                if status["healthy"]:
                    break
            assert status["healthy"] is True, (status, (tmp_path / "processes.log").read_text()[-4000:])
        daemons = status["daemons"]
        assert isinstance(daemons, dict)
        assert daemons["docker"]["ok"] is True
        assert daemons["docker"]["via"] == "runtime"
        assert daemons["celery"]["ok"] is True
        assert daemons["celery"]["workers"] >= 1
        assert daemons["redis"]["ok"] is True
        services = status["services"]
        assert isinstance(services, dict)
        assert all(services[name]["ok"] is True for name in ("registry", "runtime", "scheduler", "debug")), services
    finally:
        stop_processes(processes)
        log.close()
        redis.stop()
