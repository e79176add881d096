"""`jarvis_check_status`: doctor report, each service's health, the daemons behind them, the aggregator's own status."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from jarvis.aggregator import health
from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.downstream import report
from jarvis.aggregator.gateways.registry import to_dict
from jarvis.aggregator.gateways.scheduler import SchedulerGateway
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Tool
from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.api.scheduler.v1 import scheduler_pb2 as spb
from jarvis.common.errors import JarvisError

QUEUE_DOWN = (
    "its queue (Redis) is unreachable: triggered and due runs are kept and sent when it is back; "
    "check Redis and JARVIS_SCHEDULER_REDIS_URL"
)


async def _queue(scheduler: SchedulerGateway) -> dict[str, Any]:
    """A serving scheduler whose Celery queue is unreachable is not healthy: runs wait instead of running."""
    try:
        status = await scheduler.call(scheduler.scheduler.GetStatus, spb.GetStatusRequest())
    except JarvisError as exc:
        return {"ok": False, "detail": str(exc)}
    if status.mode == "celery" and status.queue_depth < 0:
        return {"ok": False, "detail": f"the scheduler serves, but {QUEUE_DOWN}", "queue_depth": -1}
    return {"queue_depth": status.queue_depth}


async def _doctor(ctx: ToolContext) -> list[dict[str, Any]]:
    """The registry's checks: its config, migrations, and its database through its own client."""
    try:
        return [to_dict(c) for c in (await ctx.registry.call(ctx.registry.registry.Doctor, pb.DoctorRequest())).checks]
    except JarvisError as exc:
        return [{"name": "registry", "ok": False, "detail": str(exc)}]


def build(ctx: ToolContext) -> Tool:
    async def check(_: dict[str, Any], __: Principal) -> Any:
        doctor, services, daemons = await asyncio.gather(_doctor(ctx), health.services(ctx), health.daemons(ctx))
        if ctx.scheduler is not None and services["scheduler"]["ok"]:
            services["scheduler"].update(await _queue(ctx.scheduler))
        # Healthy: every check passes and nothing configured is down; parts a deployment lacks (ok None) are fine.
        healthy = all(c.get("ok") for c in doctor) and all(
            s["ok"] is not False for s in (*services.values(), *daemons.values())
        )
        return {
            "healthy": healthy,
            "doctor": doctor,
            "services": services,
            "daemons": daemons,
            "downstream": report.summary(ctx.downstream),
            "discovery": ctx.events.discovery_status.value(),
            "aggregator": {
                "mode": ctx.system.mode,
                "pid": os.getpid(),
                "uptime_seconds": round(time.time() - ctx.started_at, 1),
                "surfaces": [s.path for s in ctx.events.served.value],
                "auth": ctx.auth_mode,
                "usage_events_dropped": ctx.usage.dropped,
            },
        }

    return Tool(
        name="jarvis_check_status",
        description="Status: doctor report, service health, daemons",
        handler=check,
        read_only=True,
        idempotent=True,
    )
