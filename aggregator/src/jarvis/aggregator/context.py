"""What tool handlers reach: the service clients and the host's controls, passed in, never global."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from jarvis.aggregator.debug_client import DebugClient
from jarvis.aggregator.downstream.host import DownstreamHost
from jarvis.aggregator.downstream.shares import Shares
from jarvis.aggregator.registry_client import RegistryClient
from jarvis.aggregator.runtime_client import RuntimeClient
from jarvis.aggregator.scheduler_client import SchedulerClient
from jarvis.aggregator.surfaces.base import Surface
from jarvis.aggregator.usage import UsageRecorder


class SystemControl(Protocol):
    """What the process hosting the aggregator can do to itself (embedded or distributed)."""

    mode: str

    async def bootstrap(self, restore: bool = False) -> dict[str, Any]: ...

    async def request_restart(self) -> dict[str, Any]: ...

    async def restart_infra(self) -> dict[str, Any]: ...


async def _unchanged() -> None:
    return None


def _no_discovery() -> dict[str, Any]:
    return {"search": "not served"}


@dataclass
class ToolContext:
    registry: RegistryClient
    usage: UsageRecorder
    system: SystemControl
    project_root: Path
    started_at: float
    surfaces: tuple[str, ...] = ()
    auth_mode: str = "loopback-open"
    debug: DebugClient | None = None  # None: no debug service in this deployment
    runtime: RuntimeClient | None = None  # None: no runtime service in this deployment
    scheduler: SchedulerClient | None = None  # None: no scheduler service in this deployment
    # Every served surface, set once all are built: the discovery catalog indexes their tools.
    served: tuple[Surface, ...] = ()
    redis_url: str = ""  # per-session state shared by replicas; empty: kept in memory
    # The downstream servers this aggregator runs or reaches, and their shares; None where nothing is hosted.
    downstream: DownstreamHost | None = None
    shares: Shares | None = None
    # Awaited after a write that adds or removes servers (install, uninstall, create, edit, client
    # import), so discovery finds their tools at once. It never raises.
    catalog_changed: Callable[[], Awaitable[None]] = _unchanged
    # Discovery's dense retrieval: where the built model graph and the tool vectors are kept (None: the
    # user's cache directory), whether it runs at all, and how it stands (set by the discovery surface).
    discovery_cache: Path | None = None
    discovery_dense: bool = True
    discovery_status: Callable[[], dict[str, Any]] = _no_discovery
