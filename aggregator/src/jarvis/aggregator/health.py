"""What `/readyz`, `jarvis_check_status` and `jarvis status` ask: every backend this aggregator is configured with, all
at once, each within a bound, so a hung service (a stopped process that still holds its port) is named, not waited on.

The backends are passed as `Backends` (a `ToolContext` is one; so is what `jarvis status` builds from the targets a
running `jarvis up` publishes), so the command and the tool ask the same probes and give the same verdict."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

from jarvis.aggregator import probes
from jarvis.aggregator.gateways.debug import DEBUG_SERVICE
from jarvis.aggregator.gateways.registry_base import REGISTRY_SERVICE
from jarvis.aggregator.gateways.runtime import RUNTIME_SERVICE
from jarvis.aggregator.gateways.scheduler import SCHEDULER_SERVICE
from jarvis.common.errors import JarvisError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from jarvis.aggregator.gateways.protocols import RuntimeApi, SchedulerApi, ServiceApi
    from jarvis.aggregator.views.registry import DoctorCheckView

# Without the registry no token verifies and no jarvis tool answers: this aggregator cannot serve. The
# others take out one surface each; they are reported, but do not pull every replica out of the balancer.
REQUIRED = frozenset({"registry"})
READY_TIMEOUT = probes.PROBE_TIMEOUT
QUEUE_DOWN = (
    "its queue (Redis) is unreachable: triggered and due runs are kept and sent when it is back; "
    "check Redis and JARVIS_SCHEDULER_REDIS_URL"
)


class Backends(Protocol):
    """The services and daemons one Jarvis runs with (None, "": not part of this deployment)."""

    @property
    def registry(self) -> ServiceApi | None: ...
    @property
    def runtime(self) -> RuntimeApi | None: ...
    @property
    def scheduler(self) -> SchedulerApi | None: ...
    @property
    def debug(self) -> ServiceApi | None: ...
    @property
    def redis_url(self) -> str: ...


def _clients(ctx: Backends) -> dict[str, tuple[ServiceApi | None, str]]:
    return {
        "registry": (ctx.registry, REGISTRY_SERVICE),
        "runtime": (ctx.runtime, RUNTIME_SERVICE),
        "scheduler": (ctx.scheduler, SCHEDULER_SERVICE),
        "debug": (ctx.debug, DEBUG_SERVICE),
    }


def healthy(doctor: Iterable[DoctorCheckView], advisory: Iterable[str], *checks: dict[str, dict[str, Any]]) -> bool:
    """Every doctor check passes (or only advises) and nothing configured is down; a part a deployment lacks (ok
    None) is fine."""
    advice = set(advisory)
    return all(c.ok or c.name in advice for c in doctor) and all(
        probe["ok"] is not False for found in checks for probe in found.values()
    )


async def services(ctx: Backends, timeout: float = probes.PROBE_TIMEOUT) -> dict[str, dict[str, Any]]:
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


async def daemons(ctx: Backends) -> dict[str, dict[str, Any]]:
    """Docker through the runtime, Celery through the scheduler, Redis by its client."""
    bound = probes.RELAYED_PROBE_TIMEOUT + 0.5
    docker, celery, redis = await asyncio.gather(
        probes.within(bound, "the runtime (asked about Docker)", probes.docker_via_runtime(ctx.runtime)),
        probes.within(bound, "the scheduler (asked about its workers)", probes.celery_via_scheduler(ctx.scheduler)),
        probes.within(bound, "Redis", probes.redis_ping(ctx.redis_url)),
    )
    return {"docker": docker, "redis": redis, "celery": celery}


async def check_all(ctx: Backends) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Each service's health (the scheduler's with its queue) and each daemon's: what a status reports."""
    found, running = await asyncio.gather(services(ctx), daemons(ctx))
    if ctx.scheduler is not None and found["scheduler"]["ok"]:
        found["scheduler"].update(await scheduler_queue(ctx.scheduler))
    return found, running


async def scheduler_queue(scheduler: SchedulerApi) -> dict[str, Any]:
    """A serving scheduler whose Celery queue is unreachable is not healthy: runs wait instead of running."""
    try:
        status = await scheduler.get_status()
    except JarvisError as exc:
        return {"ok": False, "detail": str(exc)}
    if status.mode == "celery" and status.queue_depth < 0:
        return {"ok": False, "detail": f"the scheduler serves, but {QUEUE_DOWN}", "queue_depth": -1}
    return {"queue_depth": status.queue_depth}


async def readiness(ctx: Backends) -> tuple[bool, dict[str, Any]]:
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
