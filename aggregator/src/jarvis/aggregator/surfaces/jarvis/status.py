"""`jarvis_check_status`: doctor report, each service's health, the daemons behind them, the aggregator's own status."""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from typing import Any

from jarvis.aggregator import health, probes
from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.downstream.hosting import report
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Tool
from jarvis.aggregator.views.registry import ADVISORY_DOCTOR_CHECKS, DoctorCheckView
from jarvis.common.errors import JarvisError
from jarvis.common.params import NoParams

DOCTOR_BOUND = probes.RELAYED_PROBE_TIMEOUT
# Probe results: {"ok": True | False | None, "detail": ..., and what the probe adds}.
Checks = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class AggregatorStatus:
    mode: str
    pid: int
    uptime_seconds: float
    surfaces: list[str]
    auth: str
    usage_events_dropped: int


@dataclass(frozen=True)
class Status:
    healthy: bool
    # What to fix though Jarvis works, each naming the path and the command (e.g. a data dir others can read).
    warnings: list[str]
    doctor: list[DoctorCheckView]
    services: Checks
    daemons: Checks
    downstream: report.HostedSummary
    discovery: dict[str, Any]  # how discovery ranks now, as the discovery surface reports it
    aggregator: AggregatorStatus


async def _doctor(ctx: ToolContext) -> list[DoctorCheckView]:
    """The registry's checks: its config, migrations, and its database through its own client.

    Bounded like the other probes: a hung registry is reported as such, the status answers within seconds
    (the gateway allows `jarvis doctor` longer, for a slow database).
    """
    try:
        return await asyncio.wait_for(ctx.registry.doctor(), DOCTOR_BOUND)
    except TimeoutError:
        detail = f"the registry service at {ctx.registry.target} did not answer its checks within {DOCTOR_BOUND:g} s"
        return [DoctorCheckView(name="registry", ok=False, detail=detail)]
    except JarvisError as exc:
        return [DoctorCheckView(name="registry", ok=False, detail=str(exc))]


def _aggregator(ctx: ToolContext) -> AggregatorStatus:
    return AggregatorStatus(
        mode=ctx.system.mode,
        pid=os.getpid(),
        uptime_seconds=round(time.time() - ctx.started_at, 1),
        surfaces=[s.path for s in ctx.events.served.value],
        auth=ctx.auth_mode,
        usage_events_dropped=ctx.usage.dropped,
    )


def build(ctx: ToolContext) -> Tool:
    async def check(_: NoParams, __: Principal) -> Status:
        doctor, (services, daemons) = await asyncio.gather(_doctor(ctx), health.check_all(ctx))
        return Status(
            healthy=health.healthy(doctor, ADVISORY_DOCTOR_CHECKS, services, daemons),
            warnings=[f"{c.name}: {c.detail}" for c in doctor if not c.ok and c.name in ADVISORY_DOCTOR_CHECKS],
            doctor=doctor,
            services=services,
            daemons=daemons,
            downstream=report.summary(ctx.downstream),
            discovery=ctx.events.discovery_status.value(),
            aggregator=_aggregator(ctx),
        )

    return Tool(
        name="jarvis_check_status",
        description="Status: doctor report, service health, daemons",
        summary=(
            "Health of this Jarvis installation: a doctor report of what is installed and misconfigured, each "
            "service's health (registry, runtime, scheduler, debug) and the daemons it needs."
        ),
        handler=check,
        params=NoParams,
        read_only=True,
        idempotent=True,
    )
