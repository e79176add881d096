"""`jarvis_check_status`: doctor report, each service's health, the aggregator's own status."""

from __future__ import annotations

import os
import time
from typing import Any

from jarvis.aggregator import probes
from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.debug_client import DEBUG_SERVICE
from jarvis.aggregator.downstream import report
from jarvis.aggregator.principal import Principal
from jarvis.aggregator.registry_client import REGISTRY_SERVICE, to_dict
from jarvis.aggregator.runtime_client import RUNTIME_SERVICE
from jarvis.aggregator.scheduler_client import SCHEDULER_SERVICE
from jarvis.aggregator.surfaces.base import Tool
from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.common.errors import JarvisError

# Services a deployment may lack (a target left empty); reported plainly rather than hidden.
PENDING_SERVICES = ("runtime", "scheduler", "debug")


def build(ctx: ToolContext) -> Tool:
    async def check(_: dict[str, Any], __: Principal) -> Any:
        try:
            doctor: Any = [to_dict(c) for c in
                           (await ctx.registry.call(ctx.registry.registry.Doctor, pb.DoctorRequest())).checks]
        except JarvisError as exc:
            doctor = [{"name": "registry", "ok": False, "detail": str(exc)}]
        services = {"registry": await probes.grpc_health(ctx.registry.channel, REGISTRY_SERVICE)}
        if ctx.debug is not None:
            services["debug"] = await probes.grpc_health(ctx.debug.channel, DEBUG_SERVICE)
        if ctx.runtime is not None:
            services["runtime"] = await probes.grpc_health(ctx.runtime.channel, RUNTIME_SERVICE)
        if ctx.scheduler is not None:
            services["scheduler"] = await probes.grpc_health(ctx.scheduler.channel, SCHEDULER_SERVICE)
        services.update({name: {"ok": None, "detail": "not part of this deployment yet"}
                         for name in PENDING_SERVICES if name not in services})
        infra = await ctx.system.infra_status()
        healthy = (all(c.get("ok") for c in doctor) and services["registry"]["ok"]
                   and all(services[name]["ok"] is not False for name in PENDING_SERVICES))
        return {
            "healthy": bool(healthy),
            "doctor": doctor,
            "services": services,
            "daemons": infra,
            "downstream": report.summary(ctx.downstream),
            "discovery": ctx.discovery_status(),
            "aggregator": {
                "mode": ctx.system.mode,
                "pid": os.getpid(),
                "uptime_seconds": round(time.time() - ctx.started_at, 1),
                "surfaces": list(ctx.surfaces),
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
