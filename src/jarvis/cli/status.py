"""`jarvis status`: the registry's doctor report and, beside a running `jarvis up`, its services and daemons, asked
with the probes `jarvis_check_status` asks (`jarvis.aggregator.health`), so the command and the tool agree: a Docker
engine the runtime cannot reach fails both."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jarvis.aggregator import health
from jarvis.aggregator.gateways.debug import DebugGateway
from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.gateways.runtime import RuntimeGateway
from jarvis.aggregator.gateways.scheduler import SchedulerGateway
from jarvis.aggregator.views.registry import ADVISORY_DOCTOR_CHECKS, DoctorCheckView
from jarvis.common.internal_plane import InternalPlane

Checks = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class ServedBackends:
    """The services a running `jarvis up` named in its data dir's lock file, as `health.Backends`."""

    registry: RegistryGateway | None
    runtime: RuntimeGateway | None
    scheduler: SchedulerGateway | None
    debug: DebugGateway | None
    redis_url: str

    @classmethod
    def named(cls, targets: dict[str, str], plane: InternalPlane, redis_url: str) -> ServedBackends:
        def at(name: str) -> str:
            return targets.get(name, "")

        return cls(
            registry=RegistryGateway(at("registry"), read_cache_seconds=0, plane=plane) if at("registry") else None,
            runtime=RuntimeGateway(at("runtime"), plane) if at("runtime") else None,
            scheduler=SchedulerGateway(at("scheduler"), plane) if at("scheduler") else None,
            debug=DebugGateway(at("debug"), plane) if at("debug") else None,
            redis_url=redis_url,
        )

    async def close(self) -> None:
        for client in (self.registry, self.runtime, self.scheduler, self.debug):
            if client is not None:
                await client.close()


@dataclass(frozen=True)
class Report:
    doctor: list[DoctorCheckView]
    services: Checks  # empty when no `jarvis up` serves the data dir
    daemons: Checks

    @property
    def healthy(self) -> bool:
        return health.healthy(self.doctor, ADVISORY_DOCTOR_CHECKS, self.services, self.daemons)

    def lines(self, data_dir: Path) -> list[str]:
        lines = [f"{_mark(c.ok, c.name in ADVISORY_DOCTOR_CHECKS)} {c.name}: {c.detail}" for c in self.doctor]
        if not self.services:
            return [
                *lines,
                f"--   services: no `jarvis up` serves {data_dir}; once one does, `jarvis status` checks its services "
                "and daemons too",
            ]
        found = {**self.services, **self.daemons}
        return [*lines, *(f"{_mark(probe['ok'])} {name}: {probe['detail']}" for name, probe in found.items())]


def _mark(ok: bool | None, advisory: bool = False) -> str:
    if ok is None:
        return "--  "
    return "ok  " if ok else "warn" if advisory else "FAIL"


async def report(registry: RegistryGateway, served: dict[str, str], plane: InternalPlane, redis_url: str) -> Report:
    """The doctor report from `registry`, and the health of the services in `served` (none: no `jarvis up`)."""
    doctor = await registry.doctor()
    if not served:
        return Report(doctor, {}, {})
    backends = ServedBackends.named(served, plane, redis_url)
    try:
        services, daemons = await health.check_all(backends)
    finally:
        await backends.close()
    return Report(doctor, services, daemons)
