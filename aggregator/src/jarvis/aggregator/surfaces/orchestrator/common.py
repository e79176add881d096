"""What the orchestrator's tools share: the runtime client (or why there is none) and common parameters."""

from __future__ import annotations

from dataclasses import dataclass

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.gateways.protocols import RuntimeApi
from jarvis.common.errors import FailedPrecondition

NO_RUNTIME = (
    "the runtime service is not part of this deployment: run it (`jarvis serve runtime`) and set "
    "JARVIS_AGGREGATOR_RUNTIME_TARGET to its host:port"
)


def runtime(ctx: ToolContext) -> RuntimeApi:
    if ctx.runtime is None:
        raise FailedPrecondition(NO_RUNTIME)
    return ctx.runtime


@dataclass(frozen=True)
class ProjectScoped:
    project_id: str


@dataclass(frozen=True)
class SessionScoped:
    project_id: str
    session_id: str
