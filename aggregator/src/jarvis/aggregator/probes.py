"""Reachability probes for infrastructure Jarvis depends on: Docker engine, Redis, gRPC services."""

from __future__ import annotations

import asyncio
import time
from typing import Any
from urllib.parse import urlparse

import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc

PROBE_TIMEOUT = 2.0


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
        return {"ok": False, "detail": f"Docker engine at {docker_host} unreachable: {exc.__class__.__name__}"
                f"{': ' + str(exc) if str(exc) else ''}; start dockerd or set DOCKER_HOST"}
    ok = reply.startswith(b"HTTP/1.") and b" 200 " in reply.split(b"\r\n", 1)[0]
    return {"ok": ok, "detail": f"Docker engine at {docker_host}" + (" answered" if ok else " refused /_ping"),
            "latency_ms": round((time.perf_counter() - started) * 1000, 2)}


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


async def grpc_health(channel: grpc.aio.Channel, service: str) -> dict[str, Any]:
    stub = health_pb2_grpc.HealthStub(channel)
    started = time.perf_counter()
    try:
        resp = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=PROBE_TIMEOUT)
    except grpc.aio.AioRpcError as exc:
        return {"ok": False, "detail": f"{exc.code().name}: {exc.details()}"}
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status)
    return {"ok": status == "SERVING", "detail": status,
            "latency_ms": round((time.perf_counter() - started) * 1000, 2)}


async def wait_serving(target: str, service: str, timeout: float) -> dict[str, Any]:
    """Poll the gRPC health of `service` at `target` until it serves or `timeout` passes; the last answer."""
    deadline = time.monotonic() + timeout
    async with grpc.aio.insecure_channel(target) as channel:
        while True:
            health = await grpc_health(channel, service)
            if health["ok"] or time.monotonic() >= deadline:
                return health
            await asyncio.sleep(0.1)
