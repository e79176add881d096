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
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp.shared.dispatcher import ProgressFnT
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from jarvis.aggregator.calls.record import OTHER_SERVER
from jarvis.aggregator.downstream.auth.storage import GrantStore
from jarvis.aggregator.downstream.hosting.exposure import EXPOSED_KEPT, ExposedEntry, ExposedTool, exposed_tools
from jarvis.aggregator.downstream.hosting.launch import HostConfig, LaunchPlanner, read_host_config
from jarvis.aggregator.downstream.hosting.listeners import Listeners
from jarvis.aggregator.downstream.hosting.lists import EVERY_LIST, ONLY_TOOLS, Lists
from jarvis.aggregator.downstream.hosting.personal import PER_PERSON, PersonalServers
from jarvis.aggregator.downstream.hosting.reread import RereadOnMiss
from jarvis.aggregator.downstream.hosting.result_cache import ResultCache
from jarvis.aggregator.downstream.hosting.supervisor import RUNNING, STARTING, HostOptions, ServerHost
from jarvis.aggregator.downstream.hosting.tools import ServedTools, check_pins, known_from_pins, names_of
from jarvis.aggregator.downstream.transport.connection import Connection
from jarvis.aggregator.downstream.transport.handshake import known_2026_only
from jarvis.aggregator.downstream.transport.relay import Caller
from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.gateways.runtime import RuntimeGateway
from jarvis.aggregator.tooling.background import Background
from jarvis.aggregator.views.registry import LaunchView, ServerView, ToolPinView
from jarvis.common.errors import JarvisError, NotFound

log = logging.getLogger(__name__)

Listener = Callable[[set[str], set[str], Lists], None]  # (profiles, servers, which of their lists)
ResourceListener = Callable[[str, str], None]
NoticeListener = Callable[[str, str, dict[str, Any]], None]  # (server, method, params)
# The metric label of a server that is not (or no longer) installed: labels stay within the installed set.


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
        vault: GrantStore | None = None,
        public_url: Callable[[], Awaitable[str]] | None = None,  # where browsers come back after a consent
        redis_url: str = "",  # where consents are relayed between processes (several workers, replicas)
    ) -> None:
        self.registry = registry
        self.options = options
        self._planner = LaunchPlanner(project_root, max_message_bytes, options.own_requests, runtime)
        self.watch_seconds = watch_seconds
        self.config = HostConfig()
        self.hosts: dict[str, ServerHost] = {}
        self.profiles: dict[str, tuple[str, ...]] = {}
        self._specs: dict[str, tuple[LaunchView | None, bool, bool]] = {}  # (launch, interactive, per person) each
        self._known: dict[str, ServedTools] = {}
        self._pins_seen: list[ToolPinView] = []
        # Per (servers, prefixed): the ServedTools it was built from (kept alive, compared by identity) and the result.
        self._exposed: dict[tuple[tuple[str, ...], bool, str], ExposedEntry] = {}
        self._listeners: Listeners[[set[str], set[str], Lists]] = Listeners("list")
        self._resource_listeners: Listeners[[str, str]] = Listeners("resource-update")
        self._notice_listeners: Listeners[[str, str, dict[str, Any]]] = Listeners("notice")
        self._task: asyncio.Task[None] | None = None
        self._sync_lock = asyncio.Lock()
        self.synced = False
        self._misses = RereadOnMiss(self.refresh)
        self.results = ResultCache()  # results the servers said stay fresh (forward)
        self._background = Background()  # idle servers being stopped
        # Servers each person authorizes at with their own account (`servers.oauth`): a connection per person.
        # Their tools are pinned, then known to everyone; each person's own connection lists them to that person.
        self.personal = PersonalServers(
            vault,
            options,
            self._load_tools,
            lists_changed=self._lists_changed,
            base_url=public_url,
            redis_url=redis_url,
        )

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
        await self.personal.stop()
        await self._background.close()

    def server_label(self, server: str) -> str:
        """`server` as a metric label: installed servers are a bounded set that admins control; anything else is
        OTHER_SERVER, so a name that is not installed can never add a series."""
        return server if server in self.hosts else OTHER_SERVER

    def subscribe(self, listener: Listener) -> None:
        """`listener(profiles, servers, lists)` runs when those lists of those profiles and servers may have changed."""
        self._listeners.add(listener)

    def on_resource_updated(self, listener: ResourceListener) -> None:
        """`listener(server, uri)` runs when a server says one of its resources changed (it was subscribed)."""
        self._resource_listeners.add(listener)

    def on_notice(self, listener: NoticeListener) -> None:
        """`listener(server, method, params)` runs for each notification a server sends that Jarvis relays as the
        wire had it (connection.py says which)."""
        self._notice_listeners.add(listener)

    def _notice(self, server: str, method: str, params: dict[str, Any]) -> None:
        self._notice_listeners.tell(server, method, params)

    def _resource_updated(self, server: str, uri: str) -> None:
        self.results.forget_reads(server, uri)
        self._resource_listeners.tell(server, uri)

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
            servers = (await self.registry.read_servers()).views
            profiles = await self.registry.list_profiles()
            pins = await self._pins()
            was_prefixed = {p: self.prefixed(p) for p in self.profiles}
            self.config = await read_host_config(self.registry)
            relaunched: set[str] = set()  # re-launched or removed: any of their lists may change
            for server in servers:
                if await self._apply_server(server):
                    relaunched.add(server.name)
            oauth, keyed = self.config.oauth, self.config.per_person
            planned = {s.name: self._planner.plan(s) for s in servers if s.name in oauth or s.name in keyed}
            await self.personal.set_plans(planned, oauth, keyed, self.config.oauth_clients)
            for name in set(self.hosts) - {s.name for s in servers}:
                await self.hosts.pop(name).stop("uninstalled")
                self._specs.pop(name, None)
                relaunched.add(name)
            new_profiles = {p.name: tuple(p.servers) for p in profiles}
            regrouped = {  # profiles whose servers changed: so may all their lists
                n for n in set(new_profiles) | set(self.profiles) if new_profiles.get(n) != self.profiles.get(n)
            }
            self.profiles = new_profiles
            renamed = {p for p in new_profiles if p in was_prefixed and was_prefixed[p] != self.prefixed(p)}
            regrouped |= renamed  # `servers.unprefixed_profiles` changed: every tool on it has a new name
            known = self._known_tools(pins)
            retooled = {  # servers whose tools' names changed (pins): only their tools
                s for s in set(known) | set(self._known) if names_of(known.get(s)) != names_of(self._known.get(s))
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
        for name in relaunched:
            self.results.forget_server(name)
        if regrouped or relaunched:
            self._notify(regrouped | {p for s in relaunched for p in self._profiles_of(s)}, relaunched, EVERY_LIST)
        if retooled:
            self._notify({p for s in retooled for p in self._profiles_of(s)}, retooled, ONLY_TOOLS)

    async def refresh_after_miss(self) -> None:
        """Read the registry again for a profile or server name this aggregator does not know (reread.py)."""
        await self._misses.after_miss()

    async def _apply_server(self, server: ServerView) -> bool:
        """Host a new server, or re-host one whose launch spec changed; whether its tools may have changed.

        Being interactive counts as part of the spec: the capabilities a server is offered are fixed when it starts.
        """
        interactive = server.name in self.config.interactive
        personal = server.name in self.config.oauth or server.name in self.config.per_person
        spec = (server.launch, interactive, personal)
        host = self.hosts.get(server.name)
        if host is not None and self._specs.get(server.name) == spec:
            return False
        was_up = host is not None and host.state in (RUNNING, STARTING)
        if host is not None:
            await host.stop("launch spec changed")
        self._specs[server.name] = spec
        self.hosts[server.name] = ServerHost(
            server.name,
            PER_PERSON.format(server=server.name) if personal else self._planner.plan(server),
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

    async def _pins(self) -> list[ToolPinView]:
        try:
            return await self.registry.list_tool_pins()
        except JarvisError as exc:  # e.g. an older registry mid-upgrade: servers still sync; starts fail closed
            log.warning("tool pins unavailable (%s); listing a profile starts its servers to learn their tools", exc)
            return []

    def _known_tools(self, pins: list[ToolPinView]) -> dict[str, ServedTools]:
        """The pinned tools per server, rebuilt only when the pins changed: normalising every pinned schema
        on each sync tick would cost CPU in proportion to all installed tools, every few seconds."""
        if pins == self._pins_seen:
            return self._known
        self._pins_seen = pins
        return known_from_pins(pins)

    async def _load_tools(self, host: ServerHost, connection: Connection) -> ServedTools:
        raw = await connection.list_tools(self.options.list_timeout)
        return await check_pins(self.registry, host.name, raw)

    def _lists_changed(self, server: str, lists: Lists) -> None:
        self.results.forget_server(server)  # a change of any list, or a start or stop: nothing stored still holds
        self._notify(self._profiles_of(server), {server}, lists)

    def _profiles_of(self, server: str) -> set[str]:
        return {p for p, members in self.profiles.items() if server in members}

    def _notify(self, profiles: set[str], servers: set[str], lists: Lists) -> None:
        self._listeners.tell(profiles, servers, lists)

    def _stop_idle(self) -> None:
        idle = self.config.idle_stop_seconds
        if idle <= 0:
            return
        now = time.monotonic()
        for host in self.hosts.values():
            if not host.eager and host.in_flight == 0 and host.state != "stopped" and now - host.last_used > idle:
                self._background.spawn(host.stop(f"idle for {idle} s"))
        self.personal.stop_idle(idle, self._background.spawn)

    # ------------------------------------------------------------ queries

    def host(self, name: str) -> ServerHost:
        host = self.hosts.get(name.strip().lower())
        if host is None:
            raise NotFound(f"server '{name}' is not installed; jarvis_server action=list shows the installed servers")
        return host

    def tools_of(self, server: str, person: str = "") -> ServedTools | None:
        """Live tools when running (for a server each person connects to: on `person`'s own connection), else what
        was pinned when last seen, from anyone's connection; None when never seen."""
        if person and (own := self.personal.tools_for(server, person)) is not None:
            return own
        host = self.hosts.get(server)
        if host is not None and host.connection is not None:
            return host.tools
        return self._known.get(server)

    def exposed(self, servers: tuple[str, ...], prefixed: bool, person: str = "") -> dict[str, ExposedTool]:
        """The tools a surface over `servers` serves to `person`, by their name there (shared: callers must not
        modify it); exposure.py says how.

        Asked several times per proxied call (the gate, the handler), so the result is kept until one of
        the servers' tool sets is replaced (a start, a reload, a stop: each makes a new `ServedTools`).
        """
        personal = any(self.personal.serves(server) for server in servers)
        key = (servers, prefixed, person if personal else "")
        sources = tuple(self.tools_of(server, person) for server in servers)
        cached = self._exposed.get(key)
        if cached is not None and all(a is b for a, b in zip(cached[0], sources, strict=True)):
            return cached[1]
        if len(self._exposed) > EXPOSED_KEPT:
            self._exposed.clear()
        connects = {server for server in servers if server in self.personal.plans}
        tools = exposed_tools(servers, sources, prefixed, connects)
        self._exposed[key] = (sources, tools)
        return tools

    def interactive(self, servers: tuple[str, ...]) -> bool:
        """Whether a call to one of `servers` may be asked something back (its answer must then stream): an
        interactive server's questions, or a person's consent link (a URL elicitation) for a `servers.oauth` one."""
        return any(server in self.config.interactive or server in self.config.oauth for server in servers)

    def asks_in_rounds(self, servers: tuple[str, ...]) -> bool:
        """Whether one of `servers` is known to be reached in 2026-07-28 only: its tool calls may end in input-required
        results, which Jarvis asks a 2025-era caller on the call's stream (proxy/input_rounds.py), so such a
        caller's answer must stream."""
        for server in servers:
            host = self.hosts.get(server)
            connection = host.connection if host is not None else None
            if known_2026_only(server) or (
                connection is not None and connection.protocol_version in MODERN_PROTOCOL_VERSIONS
            ):
                return True
        return False

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
        person: str = "",
    ) -> dict[str, Any]:
        """`tools/call` on a hosted server (params as MCP sends them, with the server's own tool name).

        The raw result comes back as the server sent it; a server that cannot start, a crash or a
        deadline become a JarvisError with the reason. The call pipeline's backend for downstream
        tools (hosting/routing.py), which has judged the call first (scopes, limits, `withheld`). An
        interactive server's sampling and elicitation requests during the call go to `caller` (none:
        they are refused).
        """
        host = self.host(server)
        personal = self.personal.serves(host.name)  # on the caller's own connection, with their own authorization
        if not personal:
            await host.ensure_running(self.options.init_timeout)
        if personal:
            return await self.personal.call(host.name, person, params, progress, caller, caller_version, input_schema)
        return await host.call(
            "tools/call", params, None, progress, caller, caller_version=caller_version, input_schema=input_schema
        )

    async def forward(
        self, server: str, method: str, params: dict[str, Any] | None, caller_version: str | None = None
    ) -> dict[str, Any]:
        """Any other request to a hosted server, raw (resources, prompts, completions: transparency); a list or read
        the server said stays fresh is answered from `results` while it does."""
        key, host = ResultCache.key(server, method, params, caller_version), self.host(server)
        return await self.results.through(key, lambda: host.call(method, params, None, caller_version=caller_version))

    async def learn_tools(self, servers: tuple[str, ...], wait: float | None = None, person: str = "") -> None:
        """Start the servers never seen before (their tools are unknown); failures are left to status. A server each
        person connects to is started on `person`'s own connection, where they have one, and never shared.

        With `wait`, return after that many seconds even if some are still starting: they go on starting, and
        their tools reach the lists when they are up (listeners hear of it as of any change of tools).
        """
        personal = [s for s in servers if self.personal.serves(s)]
        own = [
            self.personal.learn(s, person, wait)
            for s in personal
            if person and self.personal.tools_for(s, person) is None and s in self.personal.plans
        ]
        unseen = [self.hosts[s] for s in servers if s in self.hosts and s not in personal and self.tools_of(s) is None]
        if not unseen and not own:
            return
        starting: list[asyncio.Future[Any]] = [
            asyncio.ensure_future(h.ensure_running(self.options.init_timeout)) for h in unseen
        ]
        starting += [asyncio.ensure_future(learning) for learning in own]
        _, pending = await asyncio.wait(starting, timeout=wait)
        for waiting in pending:  # only the wait ends: each server's start runs in its own task
            waiting.cancel()
        # Failures are each server's state, which status and the calls report; gathered so none goes unretrieved.
        await asyncio.gather(*starting, return_exceptions=True)
