"""What tool handlers reach: the service clients and the host's controls, passed in, never global."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from jarvis.aggregator.calls.pipeline import CallPipeline
from jarvis.aggregator.downstream.hosting.host import DownstreamHost
from jarvis.aggregator.downstream.proxy.shares import Shares
from jarvis.aggregator.gateways.protocols import DebugApi, RegistryApi, RuntimeApi, SchedulerApi
from jarvis.aggregator.tooling.events import Published, Signal
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Surface
from jarvis.aggregator.usage import UsageRecorder


class AgentMinter(Protocol):
    """Mints an agent session's credential for the signed-in person spawning it (oauth/agents.py, decision 0057)."""

    async def session_credential(self, principal: Principal, project_id: str) -> tuple[str, dict[str, str]] | None:
        """The new session's id and the agent's JARVIS_* environment; None for no one (a machine's token)."""
        ...


class RoleRecord(Protocol):
    """A sign-in role: identity-provider groups and single users given Jarvis scopes."""

    @property
    def name(self) -> str: ...

    @property
    def groups(self) -> tuple[str, ...]: ...

    @property
    def users(self) -> tuple[str, ...]: ...

    @property
    def scopes(self) -> tuple[str, ...]: ...


class PeopleEditor(Protocol):
    """What an admin does to the people who sign in and their roles (oauth/server/admin.py's PeopleAdmin)."""

    async def users(self) -> list[dict[str, Any]]: ...

    async def set_disabled(self, who: str, disabled: bool) -> dict[str, Any]: ...

    async def roles(self) -> Sequence[RoleRecord]: ...

    async def role_scopes(self, subject: str) -> tuple[str, ...]: ...

    async def scopes_of(self, users: Iterable[dict[str, Any]]) -> dict[str, tuple[str, ...]]: ...

    async def set_role(
        self, name: str, groups: Iterable[str], users: Iterable[str], scopes: Iterable[str]
    ) -> RoleRecord: ...

    async def delete_role(self, name: str) -> None: ...


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
    # The backend services as the handlers call them (gateways/protocols.py): the gateways, or in tests, fakes.
    registry: RegistryApi
    usage: UsageRecorder
    system: SystemControl
    project_root: Path
    started_at: float
    auth_mode: str = "loopback-open"
    debug: DebugApi | None = None  # None: no debug service in this deployment
    runtime: RuntimeApi | None = None  # None: no runtime service in this deployment
    scheduler: SchedulerApi | None = None  # None: no scheduler service in this deployment
    redis_url: str = ""  # per-session state shared by replicas; empty: kept in memory
    # The downstream servers this aggregator runs or reaches, and their shares; None where nothing is hosted.
    downstream: DownstreamHost | None = None
    shares: Shares | None = None
    # Discovery's dense retrieval: where the built model graph and the tool vectors are kept (None: the
    # user's cache directory), and whether it runs at all.
    discovery_cache: Path | None = None
    discovery_dense: bool = True
    # Agents' credentials for the signed-in person who spawns them (oauth/agents.py); None: tests without sign-in.
    agents: AgentMinter | None = None
    # The people who sign in and their roles, as an admin edits them (the admin surface's `user`/`role`); None: no
    # registry.
    people: PeopleEditor | None = None
    # The call pipeline every door runs tool calls through (calls/pipeline.py); None: one recording into a metrics
    # registry of its own, with no rate limits (a context built by a test or a tool).
    calls: CallPipeline | None = None
    events: ContextEvents = field(default_factory=ContextEvents)
