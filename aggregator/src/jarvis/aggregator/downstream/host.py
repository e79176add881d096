"""The aggregator's downstream servers: one `ServerHost` each, kept in step with the registry.

A watch loop (every `watch_seconds`) reads the installed servers, profiles, pins and the
`servers.*` config keys; it restarts servers whose launch spec changed, stops removed and idle
ones, starts the servers of autostart profiles, and tells listeners which profiles' and servers' lists
(tools, prompts, resources: lists.py) may have changed. Writes made through this aggregator call
`refresh()` so they apply at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.shared.dispatcher import ProgressFnT

from jarvis.aggregator.downstream.connection import Connection, LaunchPlan
from jarvis.aggregator.downstream.container import ContainerSpec
from jarvis.aggregator.downstream.lists import EVERY_LIST, ONLY_TOOLS, Lists
from jarvis.aggregator.downstream.naming import namespaced
from jarvis.aggregator.downstream.relay import Caller
from jarvis.aggregator.downstream.reread import RereadOnMiss
from jarvis.aggregator.downstream.stdio import StdioSpec
from jarvis.aggregator.downstream.supervisor import RUNNING, STARTING, HostOptions, ServerHost
from jarvis.aggregator.downstream.tools import ServedTools, check_pins, known_from_pins, quarantine_message
from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.gateways.runtime import RuntimeGateway
from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.common.errors import FailedPrecondition, JarvisError, NotFound

log = logging.getLogger(__name__)

Listener = Callable[[set[str], set[str], Lists], None]  # (profiles, servers, which of their lists)
ResourceListener = Callable[[str, str], None]
NoticeListener = Callable[[str, str, dict[str, Any]], None]  # (server, method, params)
# The metric label of a server that is not (or no longer) installed: labels stay within the installed set.
OTHER_SERVER = "other"
NO_RUNTIME = (
    "container-image servers run through the runtime service, and this aggregator has none: set "
    "JARVIS_AGGREGATOR_RUNTIME_TARGET to the runtime's host:port (`jarvis up` has one), or register the "
    "server as a stdio server whose command is `docker run -i --rm IMAGE`"
)


@dataclass(frozen=True)
class ExposedTool:
    """A downstream tool as a profile or share surface lists it."""

    name: str  # on the surface: `<server>__<tool>`, or the tool's own name on an unprefixed surface
    server: str
    tool: str  # on the server
    definition: dict[str, Any]


_ExposedEntry = tuple[tuple[ServedTools | None, ...], dict[str, ExposedTool]]


@dataclass
class HostConfig:
    idle_stop_seconds: int = 900
    autostart_profiles: tuple[str, ...] = ()
    unprefixed_profiles: tuple[str, ...] = ()
    interactive: tuple[str, ...] = ()  # servers whose calls may ask their caller (see relay.py)


class DownstreamHost:
    def __init__(
        self,
        registry: RegistryGateway,
        options: HostOptions,
        *,
        project_root: Path,
        max_message_bytes: int,
        watch_seconds: float = 2.0,
        runtime: RuntimeGateway | None = None,
    ) -> None:
        self.registry = registry
        self.runtime = runtime  # runs container-image servers; None: they cannot be hosted here
        self.options = options
        self.project_root = project_root
        self.max_message_bytes = max_message_bytes
        self.watch_seconds = watch_seconds
        self.config = HostConfig()
        self.hosts: dict[str, ServerHost] = {}
        self.profiles: dict[str, tuple[str, ...]] = {}
        self._specs: dict[str, bytes] = {}
        self._known: dict[str, ServedTools] = {}
        self._pins_digest = b""
        # Per (servers, prefixed): the ServedTools it was built from (kept alive, compared by identity) and the result.
        self._exposed: dict[tuple[tuple[str, ...], bool], _ExposedEntry] = {}
        self._listeners: list[Listener] = []
        self._resource_listeners: list[ResourceListener] = []
        self._notice_listeners: list[NoticeListener] = []
        self._task: asyncio.Task[None] | None = None
        self._sync_lock = asyncio.Lock()
        self.synced = False
        self._misses = RereadOnMiss(self.refresh)

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        with contextlib.suppress(JarvisError):  # the registry may come up later; the loop retries
            await self.refresh()
        self._task = asyncio.get_running_loop().create_task(self._watch(), name="downstream-watch")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await asyncio.gather(*(h.stop() for h in self.hosts.values()), return_exceptions=True)

    def server_label(self, server: str) -> str:
        """`server` as a metric label: installed servers are a bounded set that admins control; anything else is
        OTHER_SERVER, so a name that is not installed can never add a series."""
        return server if server in self.hosts else OTHER_SERVER

    def subscribe(self, listener: Listener) -> None:
        """`listener(profiles, servers, lists)` runs when those lists of those profiles and servers may have changed."""
        self._listeners.append(listener)

    def on_resource_updated(self, listener: ResourceListener) -> None:
        """`listener(server, uri)` runs when a server says one of its resources changed (it was subscribed)."""
        self._resource_listeners.append(listener)

    def on_notice(self, listener: NoticeListener) -> None:
        """`listener(server, method, params)` runs for each notification a server sends that Jarvis relays as the
        wire had it (connection.py says which)."""
        self._notice_listeners.append(listener)

    def _notice(self, server: str, method: str, params: dict[str, Any]) -> None:
        for listener in self._notice_listeners:
            try:
                listener(server, method, params)
            except Exception:
                log.exception("notice listener failed")

    def _resource_updated(self, server: str, uri: str) -> None:
        for listener in self._resource_listeners:
            try:
                listener(server, uri)
            except Exception:
                log.exception("resource-update listener failed")

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.watch_seconds)
            try:
                await self.refresh()
            except JarvisError as exc:
                log.warning("downstream sync with the registry failed (%s); retrying", exc, extra={"error": str(exc)})
            except Exception:
                log.exception("downstream sync failed; retrying")
            self._stop_idle()

    # ------------------------------------------------------------ sync

    async def refresh(self) -> None:
        """Read servers, profiles, pins and config from the registry and apply the differences."""
        async with self._sync_lock:
            began = time.monotonic()
            reg = self.registry
            servers = (await reg.call(reg.registry.ListServers, pb.ListServersRequest())).servers
            profiles = (await reg.call(reg.registry.ListProfiles, pb.ListProfilesRequest())).profiles
            pins = await self._pins()
            self.config = await self._read_config()
            relaunched: set[str] = set()  # re-launched or removed: any of their lists may change
            for server in servers:
                if await self._apply_server(server):
                    relaunched.add(server.name)
            for name in set(self.hosts) - {s.name for s in servers}:
                await self.hosts.pop(name).stop("uninstalled")
                self._specs.pop(name, None)
                relaunched.add(name)
            new_profiles = {p.name: tuple(p.servers) for p in profiles}
            regrouped = {  # profiles whose servers changed: so may all their lists
                n for n in set(new_profiles) | set(self.profiles) if new_profiles.get(n) != self.profiles.get(n)
            }
            self.profiles = new_profiles
            known = self._known_tools(pins)
            retooled = {  # servers whose tools' names changed (pins): only their tools
                s for s in set(known) | set(self._known) if _names(known.get(s)) != _names(self._known.get(s))
            } - relaunched
            self._known = known
            approved = {
                p.server
                for p in pins
                if p.state == "pinned" and p.server in self.hosts and p.tool in self.hosts[p.server].tools.quarantined
            }
            for name in approved:  # an admin approved a change: serve the tool again without a restart
                self.hosts[name].reload_tools()
            for profile in self.config.autostart_profiles:
                for name in self.profiles.get(profile, ()):
                    if name in self.hosts:
                        self.hosts[name].eager = True
                        self.hosts[name].start_eagerly()
            self.synced = True
            self._misses.read_began(began)
        if regrouped or relaunched:
            self._notify(regrouped | {p for s in relaunched for p in self._profiles_of(s)}, relaunched, EVERY_LIST)
        if retooled:
            self._notify({p for s in retooled for p in self._profiles_of(s)}, retooled, ONLY_TOOLS)

    async def refresh_after_miss(self) -> None:
        """Read the registry again for a profile or server name this aggregator does not know (reread.py)."""
        await self._misses.after_miss()

    async def _apply_server(self, server: pb.Server) -> bool:
        """Host a new server, or re-host one whose launch spec changed; whether its tools may have changed.

        Being interactive counts as part of the spec: the capabilities a server is offered are fixed when it starts.
        """
        interactive = server.name in self.config.interactive
        spec = server.launch.SerializeToString(deterministic=True) + (b"\0interactive" if interactive else b"")
        host = self.hosts.get(server.name)
        if host is not None and self._specs.get(server.name) == spec:
            return False
        was_up = host is not None and host.state in (RUNNING, STARTING)
        if host is not None:
            await host.stop("launch spec changed")
        self._specs[server.name] = spec
        self.hosts[server.name] = ServerHost(
            server.name,
            self._plan(server),
            self.options,
            self._load_tools,
            self._lists_changed,
            interactive=interactive,
            on_resource_updated=self._resource_updated,
            on_notice=self._notice,
        )
        if host is not None and host.eager:
            self.hosts[server.name].eager = True
        if was_up:  # a restart, not a stop: its tools under the new spec are learned at once
            self.hosts[server.name].start_eagerly()
        return host is not None

    async def _pins(self) -> list[pb.ToolPin]:
        try:
            return list((await self.registry.call(self.registry.registry.ListToolPins, pb.ListToolPinsRequest())).pins)
        except JarvisError as exc:  # e.g. an older registry mid-upgrade: servers still sync; starts fail closed
            log.warning("tool pins unavailable (%s); listing a profile starts its servers to learn their tools", exc)
            return []

    def _known_tools(self, pins: list[pb.ToolPin]) -> dict[str, ServedTools]:
        """The pinned tools per server, rebuilt only when the pins changed: normalising every pinned schema
        on each sync tick would cost CPU in proportion to all installed tools, every few seconds."""
        digest = hashlib.sha256(pb.ToolPinsResponse(pins=pins).SerializeToString(deterministic=True)).digest()
        if digest == self._pins_digest:
            return self._known
        self._pins_digest = digest
        return known_from_pins(pins)

    async def _read_config(self) -> HostConfig:
        reg = self.registry
        values: dict[str, Any] = {}
        for key in (
            "servers.idle_stop_seconds",
            "servers.autostart_profiles",
            "servers.unprefixed_profiles",
            "servers.interactive",
        ):
            try:
                entry = await reg.get_config(key, cached=True)
                values[key] = entry.value
            except (JarvisError, ValueError):
                continue  # an older registry without the key: keep the default
        return HostConfig(
            idle_stop_seconds=int(values.get("servers.idle_stop_seconds", 900)),
            autostart_profiles=tuple(values.get("servers.autostart_profiles", ())),
            unprefixed_profiles=tuple(values.get("servers.unprefixed_profiles", ())),
            interactive=tuple(values.get("servers.interactive", ())),
        )

    def _plan(self, server: pb.Server) -> LaunchPlan | str:
        launch = server.launch
        if launch.transport == pb.TRANSPORT_STREAMABLE_HTTP:
            return LaunchPlan(
                server.name,
                "streamable-http",
                url=launch.url,
                headers=dict(launch.headers),
                max_message_bytes=self.max_message_bytes,
                own_requests=self.options.own_requests,
            )
        try:
            env = {k: _expand(v) for k, v in launch.env.items()}
        except KeyError as exc:
            return f"environment variable {exc.args[0]} named in its env is not set where Jarvis runs"
        if launch.transport == pb.TRANSPORT_CONTAINER:
            if self.runtime is None:
                return NO_RUNTIME
            return LaunchPlan(
                server.name,
                "container",
                container=ContainerSpec(
                    server.name, launch.image, self.runtime, tuple(launch.args), env, self.max_message_bytes
                ),
                own_requests=self.options.own_requests,
            )
        cwd = launch.cwd or str(self.project_root)
        return LaunchPlan(
            server.name,
            "stdio",
            stdio=StdioSpec(server.name, launch.command, tuple(launch.args), env, cwd, self.max_message_bytes),
            own_requests=self.options.own_requests,
        )

    async def _load_tools(self, host: ServerHost, connection: Connection) -> ServedTools:
        raw = await connection.list_tools(self.options.list_timeout)
        return await check_pins(self.registry, host.name, raw)

    def _lists_changed(self, server: str, lists: Lists) -> None:
        self._notify(self._profiles_of(server), {server}, lists)

    def _profiles_of(self, server: str) -> set[str]:
        return {p for p, members in self.profiles.items() if server in members}

    def _notify(self, profiles: set[str], servers: set[str], lists: Lists) -> None:
        for listener in self._listeners:
            try:
                listener(profiles, servers, lists)
            except Exception:
                log.exception("list listener failed")

    def _stop_idle(self) -> None:
        idle = self.config.idle_stop_seconds
        if idle <= 0:
            return
        now = time.monotonic()
        for host in self.hosts.values():
            if not host.eager and host.in_flight == 0 and host.state != "stopped" and now - host.last_used > idle:
                asyncio.get_running_loop().create_task(host.stop(f"idle for {idle} s"))

    # ------------------------------------------------------------ queries

    def host(self, name: str) -> ServerHost:
        host = self.hosts.get(name.strip().lower())
        if host is None:
            raise NotFound(f"server '{name}' is not installed; jarvis_server action=list shows the installed servers")
        return host

    def tools_of(self, server: str) -> ServedTools | None:
        """Live tools when running, else what was pinned when last seen; None when never seen."""
        host = self.hosts.get(server)
        if host is not None and host.connection is not None:
            return host.tools
        return self._known.get(server)

    def exposed(self, servers: tuple[str, ...], prefixed: bool) -> dict[str, ExposedTool]:
        """The tools a surface over `servers` serves, by their name there (shared: callers must not modify it).

        Asked several times per proxied call (the gate, the handler), so the result is kept until one of
        the servers' tool sets is replaced (a start, a reload, a stop: each makes a new `ServedTools`).
        """
        sources = tuple(self.tools_of(server) for server in servers)
        cached = self._exposed.get((servers, prefixed))
        if cached is not None and all(a is b for a, b in zip(cached[0], sources, strict=True)):
            return cached[1]
        tools: dict[str, ExposedTool] = {}
        for server, served_tools in zip(servers, sources, strict=True):
            for tool, definition in (served_tools or ServedTools()).tools.items():
                name = namespaced(server, tool) if prefixed else tool
                tools[name] = ExposedTool(name, server, tool, {**definition, "name": name})
        self._exposed[(servers, prefixed)] = (sources, tools)
        return tools

    def interactive(self, servers: tuple[str, ...]) -> bool:
        """Whether a call to one of `servers` may be asked something back (its answer must then stream)."""
        return any(server in self.config.interactive for server in servers)

    def prefixed(self, profile: str) -> bool:
        """Profiles listed in `servers.unprefixed_profiles` that hold one server keep its tool names as they are."""
        return not (profile in self.config.unprefixed_profiles and len(self.profiles.get(profile, ())) == 1)

    async def call_tool(
        self,
        server: str,
        params: dict[str, Any],
        progress: ProgressFnT | None = None,
        caller: Caller | None = None,
        *,
        caller_version: str | None = None,
        input_schema: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """`tools/call` on a hosted server (params as MCP sends them, with the server's own tool name).

        The raw result comes back as the server sent it; a quarantined tool, a server that cannot
        start, a crash or a deadline become a JarvisError with the reason. For any surface that
        reaches downstream tools (profiles, shares, discovery's `tool_call`). An interactive server's
        sampling and elicitation requests during the call go to `caller` (none: they are refused).
        """
        host = self.host(server)
        await host.ensure_running(self.options.init_timeout)
        tool = str(params.get("name", ""))
        if tool in host.tools.quarantined:
            raise FailedPrecondition(quarantine_message(server, tool))
        return await host.call(
            "tools/call", params, None, progress, caller, caller_version=caller_version, input_schema=input_schema
        )

    async def forward(
        self, server: str, method: str, params: dict[str, Any] | None, caller_version: str | None = None
    ) -> dict[str, Any]:
        """Any other request to a hosted server, raw (resources, prompts, completions: transparency)."""
        return await self.host(server).call(method, params, None, caller_version=caller_version)

    async def learn_tools(self, servers: tuple[str, ...]) -> None:
        """Start the servers never seen before (their tools are unknown); failures are left to status."""
        unseen = [self.hosts[s] for s in servers if s in self.hosts and self.tools_of(s) is None]
        await asyncio.gather(*(h.ensure_running(self.options.init_timeout) for h in unseen), return_exceptions=True)


def _names(tools: ServedTools | None) -> set[str]:
    return set(tools.tools) if tools is not None else set()


def _expand(value: str) -> str:
    """`${NAME}` takes the value from Jarvis's own environment, so secrets need not be stored in the registry."""
    if value.startswith("${") and value.endswith("}"):
        return os.environ[value[2:-1]]
    return value
