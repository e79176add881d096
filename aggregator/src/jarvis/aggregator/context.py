"""What tool handlers reach: the service clients and the host's controls, passed in, never global."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from jarvis.aggregator.registry_client import RegistryClient
from jarvis.aggregator.usage import UsageRecorder


class SystemControl(Protocol):
    """What the process hosting the aggregator can do to itself (embedded or distributed)."""

    mode: str

    async def bootstrap(self) -> dict[str, Any]: ...

    async def request_restart(self) -> dict[str, Any]: ...

    async def restart_infra(self) -> dict[str, Any]: ...

    async def infra_status(self) -> dict[str, Any]: ...


@dataclass
class ToolContext:
    registry: RegistryClient
    usage: UsageRecorder
    system: SystemControl
    project_root: Path
    started_at: float
    surfaces: tuple[str, ...] = ()
    auth_mode: str = "loopback-open"
