"""Several aggregator worker processes on one port (`jarvis up --workers 2`): any worker answers any request.

Each request below opens its own connection, so the kernel spreads them over both workers' sockets; a
state kept in one worker's memory would show as a tool missing from a listing, or an unknown session.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from jarvis.cli.gil import SWITCH_SECONDS
from tests.support.discovery import DISCOVERY_TOOLS, call, discovery_client, names
from tests.support.downstream import FAST_ENV, create_server, eventually, text_of, time_server
from tests.support.redis_server import redis_url
from tests.support.stack import RunningJarvis, free_port, jarvis_cli, result_json, start_jarvis

pytestmark = pytest.mark.anyio

# Two workers start the same stdio server side by side on a loaded machine: give it time to initialize.
WORKER_ENV = {**FAST_ENV, "JARVIS_AGGREGATOR_DOWNSTREAM_INIT_TIMEOUT": "30"}


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_url(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory, redis: str) -> Iterator[RunningJarvis]:
    home = tmp_path_factory.mktemp("home")
    running = start_jarvis(
        home / "data",
        "--workers",
        "2",
        # INFO, as JSON: each process says it froze its start-up heap and shortened its GIL switch interval, and
        # which process it is (checked below)
        env={
            "HOME": str(home),
            "JARVIS_REDIS_URL": redis,
            "JARVIS_LOG_LEVEL": "INFO",
            "JARVIS_LOG_JSON": "1",
            **WORKER_ENV,
        },
        timeout=180,
    )
    try:
        yield running
    finally:
        running.stop()


async def serving_pids(running: RunningJarvis, tries: int = 30) -> set[int]:
    """The processes that answered `tries` requests, each on a connection of its own."""
    pids = set()
    async with httpx2.AsyncClient(limits=httpx2.Limits(max_keepalive_connections=0)) as http:
        for _ in range(tries):
            pids.add(int((await http.get(running.base_url + "/livez")).json()["pid"]))
    return pids


async def both_workers(running: RunningJarvis) -> set[int]:
    async def two() -> set[int]:
        pids = await serving_pids(running)
        return pids if len(pids) == 2 else set()

    return set(await eventually(two, timeout=90, what="two worker processes answering on the one port"))


def log_entries(running: RunningJarvis) -> list[dict[str, Any]]:
    """The JSON entries of `jarvis up`'s log, every process's."""
    entries = []
    for line in running.log().splitlines():
        with contextlib.suppress(ValueError):
            entry = json.loads(line)
            if isinstance(entry, dict):
                entries.append(entry)
    return entries


async def test_both_workers_answer_on_one_port(workers: RunningJarvis) -> None:
    pids = await both_workers(workers)
    assert workers.process.pid in pids  # the main process is one of them


async def test_a_worker_shares_the_main_process_session_in_a_process_group_of_its_own(workers: RunningJarvis) -> None:
    """Linux's autogroup scheduler shares the CPU between sessions: a worker in a session of its own stalled for
    20-130 ms at a time beside a busy one. A process group of its own keeps a terminal's Ctrl-C (sent to the
    foreground group) away from it, so only the main process stops it."""
    (other,) = await both_workers(workers) - {workers.process.pid}
    assert os.getsid(other) == os.getsid(workers.process.pid)
    assert os.getpgid(other) == other != os.getpgid(workers.process.pid)


async def test_every_worker_freezes_its_start_up_heap(workers: RunningJarvis) -> None:
    """Otherwise each full collection walks every object of start-up with the worker's event loop stopped."""
    pids = await both_workers(workers)
    frozen = {e["pid"]: e["frozen_objects"] for e in log_entries(workers) if e.get("msg") == "start-up heap frozen"}
    assert pids <= frozen.keys()
    assert min(frozen[pid] for pid in pids) > 50_000  # the process's modules and state, not a handful


async def test_every_worker_shortens_its_gil_switch_interval(workers: RunningJarvis) -> None:
    """Otherwise each system call of the event loop may wait 5 ms for the GIL while a thread (the embedded
    registry writing usage, a stdio server's reader) runs Python."""
    pids = await both_workers(workers)
    intervals = {
        entry["pid"]: entry["seconds"]
        for entry in log_entries(workers)
        if entry.get("msg") == "GIL switch interval shortened"
    }
    assert pids <= intervals.keys()
    assert {intervals[pid] for pid in pids} == {SWITCH_SECONDS}


async def test_a_2025_session_keeps_its_loaded_tools_on_every_worker(workers: RunningJarvis) -> None:
    await both_workers(workers)
    async with discovery_client(workers.url("/mcp"), fresh_connections=True) as client:
        loaded = await call(client, "tool_load", {"names": ["jarvis_profile", "jarvis_config"]})
        assert loaded["active_count"] == 2
        for _ in range(8):  # each listing may land on either worker
            assert await names(client) == [*DISCOVERY_TOOLS, "jarvis_profile", "jarvis_config"]
            assert (await call(client, "tool_active"))["count"] == 2
        assert "profiles" in await call(client, "jarvis_profile", {"action": "list"})


async def test_a_2026_client_is_answered_by_any_worker(workers: RunningJarvis) -> None:
    await both_workers(workers)
    async with discovery_client(workers.url("/mcp"), mode="auto", fresh_connections=True) as client:
        assert client.protocol_version >= "2026"
        for _ in range(6):
            assert await names(client) == DISCOVERY_TOOLS
            listed = await call(client, "tool_call", {"name": "jarvis_profile", "arguments": {"action": "list"}})
            assert "profiles" in listed


async def test_profiles_proxy_through_every_worker_for_both_versions(workers: RunningJarvis) -> None:
    await both_workers(workers)
    async with discovery_client(workers.url("/mcp/jarvis")) as admin:
        await create_server(admin, "worker-clock", [time_server()])
        await call(admin, "jarvis_profile", {"action": "create", "name": "workers", "servers": ["worker-clock"]})

    # At once, on whichever worker each connection lands: the one that took the write knows the profile, and the
    # other reads the registry again rather than answering 404 until its next watch tick.
    async with discovery_client(workers.url("/mcp/profile/workers"), fresh_connections=True) as client:
        for _ in range(6):
            assert "worker-clock__get_current_time" in await names(client)
    async with discovery_client(workers.url("/mcp/profile/workers"), fresh_connections=True) as client:
        for _ in range(6):
            answer = await client.call_tool("worker-clock__get_current_time", {"timezone": "UTC"})
            assert '"timezone": "UTC"' in text_of(answer)
    async with discovery_client(workers.url("/mcp/profile/workers"), mode="auto", fresh_connections=True) as client:
        assert client.protocol_version >= "2026"
        for _ in range(6):
            assert "worker-clock__get_current_time" in await names(client)
            answer = await client.call_tool("worker-clock__get_current_time", {"timezone": "UTC"})
            assert '"timezone": "UTC"' in text_of(answer)


async def test_a_worker_that_dies_is_started_again(workers: RunningJarvis) -> None:
    (other,) = await both_workers(workers) - {workers.process.pid}
    os.kill(other, signal.SIGKILL)

    async def replaced() -> set[int]:
        try:
            pids = await serving_pids(workers)
        except httpx2.HTTPError:  # a connection the kernel had queued for the killed worker is reset with it
            return set()
        return pids if len(pids) == 2 and other not in pids else set()

    await eventually(replaced, timeout=90, what="a new worker in place of the killed one")
    async with discovery_client(workers.url("/mcp/jarvis"), fresh_connections=True) as client:
        for _ in range(4):
            assert "servers" in result_json(await client.call_tool("jarvis_server", {"action": "list"}))


async def scrape(running: RunningJarvis) -> dict[str, float]:
    """One /metrics answer, on a connection of its own: `jarvis_config` calls counted, by worker."""
    async with httpx2.AsyncClient(limits=httpx2.Limits(max_keepalive_connections=0)) as http:
        text = (await http.get(running.base_url + "/metrics")).text
    counted: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "jarvis_mcp_tool_calls_total" and sample.labels["tool"] == "jarvis_config":
                worker = sample.labels["worker"]
                counted[worker] = counted.get(worker, 0.0) + sample.value
    return counted


async def test_metrics_count_every_workers_calls_whichever_worker_is_scraped(workers: RunningJarvis) -> None:
    await both_workers(workers)
    before = sum((await scrape(workers)).values())
    async with discovery_client(workers.url("/mcp/jarvis"), fresh_connections=True) as client:
        for _ in range(12):
            assert "config" in result_json(await client.call_tool("jarvis_config", {"action": "list"}))

    async def all_counted() -> list[dict[str, float]]:
        scrapes = [await scrape(workers) for _ in range(10)]  # fresh connections: either worker answers
        return scrapes if all(sum(s.values()) - before == 12 for s in scrapes) else []

    scrapes = await eventually(all_counted, timeout=30, what="12 calls counted in every worker's scrape")
    # The calls went to both workers, and each scrape shows both workers' series, not only its own.
    assert all(set(s) == {"0", "1"} for s in scrapes), scrapes


def test_more_than_one_worker_needs_redis(tmp_path: Path) -> None:
    refused = jarvis_cli(
        "up",
        "--port",
        str(free_port()),
        "--workers",
        "2",
        data_dir=tmp_path / "data",
        env={"HOME": str(tmp_path), "REDIS_URL": "", "JARVIS_REDIS_URL": ""},
        check=False,
    )
    assert refused.returncode != 0
    assert "JARVIS_REDIS_URL" in refused.stderr
    assert "Traceback" not in refused.stderr
