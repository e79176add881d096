"""Reachability probes for what Jarvis depends on: gRPC services, the Docker engine (through the runtime),
Celery workers (through the scheduler), Redis. Each answers within a bound, naming what is down.

A probe's answer is {"ok": True | False | None, "detail": ...}; None means not part of this deployment.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from jarvis.common.errors import JarvisError
from jarvis.common.internal_plane import InternalPlane

if TYPE_CHECKING:
    from jarvis.aggregator.gateways.protocols import RuntimeApi, SchedulerApi

PROBE_TIMEOUT = 2.0
# The runtime pings its engine and the scheduler its workers (1 s) before answering: a little more time.
RELAYED_PROBE_TIMEOUT = 5.0


async def within(seconds: float, what: str, probe: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """`probe`'s answer, or a failure naming `what` once `seconds` have passed (a hung peer included)."""
    try:
        return await asyncio.wait_for(probe, seconds)
    except TimeoutError:
        return {"ok": False, "detail": f"{what} did not answer within {seconds:g} s"}


async def docker_ping(docker_host: str) -> dict[str, Any]:
    """GET /_ping on the engine API, over its unix socket or loopback TCP."""
    if not docker_host:
        return {"ok": False, "detail": "no Docker engine configured (set DOCKER_HOST)"}
    parsed = urlparse(docker_host)
    started = time.perf_counter()
    try:
        if parsed.scheme == "unix":
            opened = asyncio.open_unix_connection(parsed.path)
        elif parsed.scheme in ("tcp", "http"):
            opened = asyncio.open_connection(parsed.hostname, parsed.port or 2375)
        else:
            return {"ok": False, "detail": f"unsupported DOCKER_HOST scheme in {docker_host!r}"}
        reader, writer = await asyncio.wait_for(opened, PROBE_TIMEOUT)
        writer.write(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
        await writer.drain()
        reply = await asyncio.wait_for(reader.read(4096), PROBE_TIMEOUT)
        writer.close()
    except (OSError, TimeoutError) as exc:
        return {
            "ok": False,
            "detail": f"Docker engine at {docker_host} unreachable: {exc.__class__.__name__}"
            f"{': ' + str(exc) if str(exc) else ''}; start dockerd or set DOCKER_HOST",
        }
    ok = reply.startswith(b"HTTP/1.") and b" 200 " in reply.split(b"\r\n", 1)[0]
    return {
        "ok": ok,
        "detail": f"Docker engine at {docker_host}" + (" answered" if ok else " refused /_ping"),
        "latency_ms": round((time.perf_counter() - started) * 1000, 2),
    }


async def redis_ping(redis_url: str) -> dict[str, Any]:
    if not redis_url:
        return {"ok": None, "detail": "not configured: embedded mode runs without Redis (set JARVIS_REDIS_URL)"}
    import redis.asyncio as redis  # imported here: only deployments with Redis pay for it

    client = redis.Redis.from_url(redis_url, socket_timeout=PROBE_TIMEOUT, socket_connect_timeout=PROBE_TIMEOUT)
    try:
        await client.ping()
        return {"ok": True, "detail": "Redis answered PING"}
    except Exception as exc:  # the redis client raises several unrelated types for "down"
        return {"ok": False, "detail": f"Redis unreachable: {exc.__class__.__name__}; check JARVIS_REDIS_URL"}
    finally:
        await client.aclose()


async def docker_via_runtime(runtime: RuntimeApi | None) -> dict[str, Any]:
    """The engine the runtime drives, as the runtime sees it: the aggregator has no engine of its own."""
    if runtime is None:
        return {"ok": None, "detail": "no runtime in this deployment (set JARVIS_AGGREGATOR_RUNTIME_TARGET)"}
    try:
        options = await runtime.project_options(timeout=RELAYED_PROBE_TIMEOUT)
    except JarvisError as exc:
        return {"ok": False, "detail": f"cannot ask the runtime about its Docker engine: {exc}"}
    return {
        "ok": options.docker_reachable,
        "detail": options.docker_detail,
        "docker_host": options.docker_host,
        "via": "runtime",
    }


async def celery_via_scheduler(scheduler: SchedulerApi | None) -> dict[str, Any]:
    """Celery workers as a ping through the scheduler's broker finds them (none are needed embedded)."""
    if scheduler is None:
        return {"ok": None, "detail": "no scheduler in this deployment (set JARVIS_AGGREGATOR_SCHEDULER_TARGET)"}
    try:
        status = await scheduler.get_status(timeout=RELAYED_PROBE_TIMEOUT)
    except JarvisError as exc:
        return {"ok": False, "detail": f"cannot ask the scheduler about its workers: {exc}"}
    if status.workers < 0:
        return {"ok": None, "detail": f"not needed: {status.workers_detail}"}
    return {
        "ok": status.workers > 0,
        "detail": status.workers_detail,
        "workers": status.workers,
        "queue_depth": status.queue_depth,
        "via": "scheduler",
    }


async def wait_serving(target: str, service: str, timeout: float, plane: InternalPlane | None = None) -> dict[str, Any]:
    """Poll the gRPC health of `service` at `target` until it serves or `timeout` passes; the last answer."""
    from jarvis.aggregator.gateways.client import ServiceClient

    client = ServiceClient(target, {}, plane)
    deadline = time.monotonic() + timeout
    try:
        while True:
            health = await client.check_health(service, PROBE_TIMEOUT)
            if health["ok"] or time.monotonic() >= deadline:
                return health
            await asyncio.sleep(0.1)
    finally:
        await client.close()
