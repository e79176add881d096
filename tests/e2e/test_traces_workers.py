"""Traces (issue 50) across `jarvis up --workers 2`: a slow call's exemplar (its trace id, in its latency bucket) is
on an OpenMetrics scrape whichever worker answers it, as with one worker; the text format is still there for a
scraper that asks for it. Each worker's /metrics merges its siblings' files (worker_metrics.py), so the scrape that
matters is the one answered by the worker that did not serve the call."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.test_traces import call, exemplar_buckets, exemplar_value, new_trace
from tests.support.downstream import FAST_ENV, create_profile, create_toy, eventually
from tests.support.otlp_receiver import otlp_receiver
from tests.support.redis_server import redis_url
from tests.support.stack import RunningJarvis, mcp_client, start_jarvis

pytestmark = pytest.mark.anyio


@contextlib.contextmanager
def one_connection_per_worker(jarvis: RunningJarvis, workers: int = 2) -> Iterator[list[httpx2.Client]]:
    """A client per worker, each on one kept-alive connection (so every request it sends reaches the same worker),
    found by opening connections until `/livez` has named each worker's pid (the second may still be starting)."""
    pinned: dict[int, httpx2.Client] = {}
    deadline = time.monotonic() + 90
    with contextlib.ExitStack() as stack:
        while len(pinned) < workers:
            assert time.monotonic() < deadline, f"connections reached {len(pinned)} of {workers} workers"
            http = httpx2.Client(limits=httpx2.Limits(max_connections=1), timeout=30)
            pid = http.get(jarvis.url("/livez")).json()["pid"]
            if pid in pinned:
                http.close()
                time.sleep(0.1)
            else:
                pinned[pid] = http
                stack.callback(http.close)
        yield list(pinned.values())


def test_a_slow_calls_exemplar_is_on_every_workers_scrape(tmp_path_factory: pytest.TempPathFactory) -> None:
    with otlp_receiver() as receiver, redis_url(tmp_path_factory.mktemp("redis")) as redis:
        env = {
            **FAST_ENV,
            "HOME": str(tmp_path_factory.mktemp("home")),
            "JARVIS_REDIS_URL": redis,
            "JARVIS_AGGREGATOR_DOWNSTREAM_INIT_TIMEOUT": "30",  # both workers start the server on a loaded machine
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        }
        jarvis = start_jarvis(
            tmp_path_factory.mktemp("traced-workers"), "--require-auth", "--workers", "2", env=env, timeout=180
        )
        try:
            admin = jarvis.create_token("admin", name="admin")

            async def setup() -> None:
                async with mcp_client(jarvis.url(), admin) as client:
                    await create_toy(client, "tr", mode="modern")
                    await create_profile(client, "tr", "tr")

            asyncio.run(setup())
            trace_id = new_trace()
            with one_connection_per_worker(jarvis) as (serving, other):
                call(jarvis, admin, "/mcp/profile/tr", "tr__slow", {"seconds": 0.6}, trace_id, http=serving)
                receiver.wait_for(lambda s: any(x.name == "backend tr" for x in s), trace_id)
                own = exemplar_buckets(jarvis, admin, trace_id, http=serving)

                async def merged() -> list[str]:  # the serving worker's file is written every second
                    return exemplar_buckets(jarvis, admin, trace_id, http=other)

                theirs = asyncio.run(eventually(merged, timeout=15, what="the exemplar in the other worker's scrape"))
                plain = other.get(jarvis.url("/metrics"), headers={"authorization": f"Bearer {admin}"}).text
        finally:
            jarvis.stop()
    # Both scrapes show the same exemplar, in the bucket its 0.6 s fell in, labelled with the worker that served it.
    untimed = [line.rsplit(" ", 1)[0] for line in own]  # the exemplar's timestamp, read back, is written anew
    assert untimed == [line.rsplit(" ", 1)[0] for line in theirs], (own, theirs)
    assert exemplar_value(theirs[0]) >= 0.6
    [worker] = {line.split('worker="')[1].split('"')[0] for line in theirs}
    # The text format, for a scraper that asks for nothing else: every worker's series, no exemplar syntax.
    assert " # {" not in plain
    families = {f.name: f for f in text_string_to_metric_families(plain)}
    latency = families["jarvis_downstream_call_seconds"].samples
    served = [s for s in latency if s.name.endswith("_count") and s.labels == {"server": "tr", "worker": worker}]
    assert [s.value >= 1 for s in served] == [True], served
    assert {s.labels["worker"] for s in families["process_cpu_seconds"].samples} == {"0", "1"}
