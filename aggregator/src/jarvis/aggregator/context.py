"""What tool handlers reach: the service clients and the host's controls, passed in, never global."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from jarvis.aggregator.downstream.host import DownstreamHost
from jarvis.aggregator.downstream.shares import Shares
from jarvis.aggregator.gateways.debug import DebugGateway
from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.gateways.runtime import RuntimeGateway
from jarvis.aggregator.gateways.scheduler import SchedulerGateway
from jarvis.aggregator.tooling.events import Published, Signal
from jarvis.aggregator.tooling.tool import Surface
from jarvis.aggregator.usage import UsageRecorder


class SystemControl(Protocol):
    """What the process hosting the aggregator can do to itself (embedded or distributed)."""

    mode: str

    async def bootstrap(self, restore: bool = False) -> dict[str, Any]: ...

    async def request_restart(self) -> dict[str, Any]: ...

    async def restart_infra(self) -> dict[str, Any]: ...


def _no_discovery() -> dict[str, Any]:
    return {"search": "not served"}


@dataclass(frozen=True)
class ContextEvents:
    """What becomes known, or happens, after the context is built."""

    # Emitted after a write that adds or removes servers (install, uninstall, create, edit, client import),
    # so discovery finds their tools at once.
    catalog_changed: Signal[None] = field(default_factory=lambda: Signal("catalog_changed"))
    # Every served surface, once all are built: the discovery catalog indexes their tools.
    served: Published[tuple[Surface, ...]] = field(default_factory=lambda: Published("served surfaces", ()))
    # How discovery ranks now, for jarvis_check_status (published by the discovery surface when it is served).
    discovery_status: Published[Callable[[], dict[str, Any]]] = field(
        default_factory=lambda: Published("discovery status", _no_discovery)
    )


@dataclass(frozen=True)
class ToolContext:
    registry: RegistryGateway
    usage: UsageRecorder
    system: SystemControl
    project_root: Path
    started_at: float
    auth_mode: str = "loopback-open"
    debug: DebugGateway | None = None  # None: no debug service in this deployment
    runtime: RuntimeGateway | None = None  # None: no runtime service in this deployment
    scheduler: SchedulerGateway | None = None  # None: no scheduler service in this deployment
    redis_url: str = ""  # per-session state shared by replicas; empty: kept in memory
    # The downstream servers this aggregator runs or reaches, and their shares; None where nothing is hosted.
    downstream: DownstreamHost | None = None
    shares: Shares | None = None
    # Discovery's dense retrieval: where the built model graph and the tool vectors are kept (None: the
    # user's cache directory), and whether it runs at all.
    discovery_cache: Path | None = None
    discovery_dense: bool = True
    events: ContextEvents = field(default_factory=ContextEvents)
