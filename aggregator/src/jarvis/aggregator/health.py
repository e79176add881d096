"""What `/readyz` and `jarvis_check_status` ask: every backend this aggregator is configured with, all at once,
each within a bound, so a hung service (a stopped process that still holds its port) is named, not waited on."""

from __future__ import annotations

import asyncio
from typing import Any

from jarvis.aggregator import probes
from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.gateways.debug import DEBUG_SERVICE
from jarvis.aggregator.gateways.protocols import SchedulerApi, ServiceApi
from jarvis.aggregator.gateways.registry_base import REGISTRY_SERVICE
from jarvis.aggregator.gateways.runtime import RUNTIME_SERVICE
from jarvis.aggregator.gateways.scheduler import SCHEDULER_SERVICE
from jarvis.common.errors import JarvisError

# Without the registry no token verifies and no jarvis tool answers: this aggregator cannot serve. The
# others take out one surface each; they are reported, but do not pull every replica out of the balancer.
REQUIRED = frozenset({"registry"})
READY_TIMEOUT = probes.PROBE_TIMEOUT
QUEUE_DOWN = (
    "its queue (Redis) is unreachable: triggered and due runs are kept and sent when it is back; "
    "check Redis and JARVIS_SCHEDULER_REDIS_URL"
)


def _clients(ctx: ToolContext) -> dict[str, tuple[ServiceApi | None, str]]:
    return {
        "registry": (ctx.registry, REGISTRY_SERVICE),
        "runtime": (ctx.runtime, RUNTIME_SERVICE),
        "scheduler": (ctx.scheduler, SCHEDULER_SERVICE),
        "debug": (ctx.debug, DEBUG_SERVICE),
    }


async def services(ctx: ToolContext, timeout: float = probes.PROBE_TIMEOUT) -> dict[str, dict[str, Any]]:
    """gRPC health of each service; one this deployment lacks (no target) is reported as such."""
    configured = {name: (client, full) for name, (client, full) in _clients(ctx).items() if client is not None}
    answers = await asyncio.gather(
        *(
            probes.within(timeout + 0.5, f"the {name} service at {client.target}", client.check_health(full, timeout))
            for name, (client, full) in configured.items()
            if client is not None
        )
    )
    found = dict(zip(configured, answers, strict=True))
    return {name: found.get(name, {"ok": None, "detail": "not part of this deployment"}) for name in _clients(ctx)}


async def daemons(ctx: ToolContext) -> dict[str, dict[str, Any]]:
    """Docker through the runtime, Celery through the scheduler, Redis by its client."""
    bound = probes.RELAYED_PROBE_TIMEOUT + 0.5
    docker, celery, redis = await asyncio.gather(
        probes.within(bound, "the runtime (asked about Docker)", probes.docker_via_runtime(ctx.runtime)),
        probes.within(bound, "the scheduler (asked about its workers)", probes.celery_via_scheduler(ctx.scheduler)),
        probes.within(bound, "Redis", probes.redis_ping(ctx.redis_url)),
    )
    return {"docker": docker, "redis": redis, "celery": celery}


async def scheduler_queue(scheduler: SchedulerApi) -> dict[str, Any]:
    """A serving scheduler whose Celery queue is unreachable is not healthy: runs wait instead of running."""
    try:
        status = await scheduler.get_status()
    except JarvisError as exc:
        return {"ok": False, "detail": str(exc)}
    if status.mode == "celery" and status.queue_depth < 0:
        return {"ok": False, "detail": f"the scheduler serves, but {QUEUE_DOWN}", "queue_depth": -1}
    return {"queue_depth": status.queue_depth}


async def readiness(ctx: ToolContext) -> tuple[bool, dict[str, Any]]:
    """Ready when every required backend answers; the answer names each one that does not."""
    checked = await services(ctx, READY_TIMEOUT)
    if ctx.redis_url:
        checked["redis"] = await probes.within(READY_TIMEOUT + 0.5, "Redis", probes.redis_ping(ctx.redis_url))
    down = {name: result["detail"] for name, result in checked.items() if result["ok"] is False}
    ready = not (down.keys() & REQUIRED)
    body: dict[str, Any] = {
        "status": "ready" if ready else "unavailable",
        "checks": {name: result["ok"] for name, result in checked.items()},
    }
    if down:
        body["down"] = down
    return ready, body
