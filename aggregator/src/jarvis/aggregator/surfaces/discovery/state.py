"""What the discovery tools share: the catalog, each session's active tools, and who is calling."""

from __future__ import annotations

import contextvars
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import mcp_types as types

from jarvis.aggregator.aliases import Rename, build_alias_table
from jarvis.aggregator.calls.call import ToolCall
from jarvis.aggregator.calls.pipeline import unlimited
from jarvis.aggregator.calls.routes import JarvisToolRoute, Route
from jarvis.aggregator.codemode.limits import CodePolicy
from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.discovery.access import sees_everything, visible_to
from jarvis.aggregator.discovery.catalog import Catalog
from jarvis.aggregator.discovery.dense import DenseIndex
from jarvis.aggregator.discovery.entry import ToolEntry
from jarvis.aggregator.discovery.sessions import ActiveSets, open_active_sets, session_key
from jarvis.aggregator.downstream.auth.person import person_of
from jarvis.aggregator.downstream.hosting.naming import SEPARATOR
from jarvis.aggregator.downstream.hosting.personal import NEEDS_CONSENT
from jarvis.aggregator.downstream.hosting.tools import quarantine_message
from jarvis.aggregator.surfaces.discovery.downstream import route_to
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Surface
from jarvis.common.errors import FailedPrecondition, InvalidArgument, NotFound, Unavailable

log = logging.getLogger(__name__)
SURFACE = "discovery"
TOOL_CALL = "tool_call"
DISCOVERY_TOOLS = ("tool_find", "tool_describe", "tool_load", "tool_active", "tool_call", "code_run")
FIND_HINT = "use tool_find to discover available tools"
UNKNOWN_KEY = "(unknown tool)"  # the gate's one rate-limit key for names that are no tool
VISIBILITY_CACHE = 64  # distinct scope sets whose visibility decisions are kept


def shown(name: str) -> str:
    """A caller-supplied name as error messages quote it: bounded, whatever was sent."""
    return name if len(name) <= 80 else name[:77] + "..."


async def _no_notification() -> None:
    return None


async def no_progress(progress: float, total: float | None = None, message: str | None = None) -> None:
    return None


@dataclass(frozen=True)
class Caller:
    """The connection a discovery tool is serving.

    `session` keys the active set; it is None when the connection has none: a 2026-07-28 client
    (its tools/list never varies) or a stateless request without a session id.
    """

    session: str | None
    modern: bool = False
    notify_tools_changed: Callable[[], Awaitable[None]] = _no_notification
    # Progress on the request being served; a no-op unless the caller sent a progress token.
    report_progress: Callable[[float, float | None, str | None], Awaitable[None]] = no_progress


NO_SESSION = Caller(session=None)
# Set by the surface's server around each discovery tool call (tool handlers only get arguments).
CURRENT: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("jarvis_discovery_caller", default=None)


def current_caller() -> Caller:
    return CURRENT.get() or NO_SESSION


class Discovery:
    """The discovery surface's state; one per aggregator process."""

    def __init__(self, ctx: ToolContext, code: CodePolicy | None = None) -> None:
        self.ctx = ctx
        dense = DenseIndex(ctx.discovery_cache) if ctx.discovery_dense else None
        self.catalog = Catalog(ctx.registry, host=ctx.downstream, debug=ctx.debug, dense=dense)
        ctx.events.discovery_status.publish(self.status)
        self.active: ActiveSets = open_active_sets("")
        # Old tool names and what replaced them: derived from the served surfaces once they are published.
        self._aliases: tuple[tuple[Surface, ...], dict[str, Rename]] | None = None
        # stdio serves exactly one session per process.
        self.stdio_session = f"stdio-{uuid.uuid4().hex}"
        self._visibility: dict[tuple[str, ...], Callable[[ToolEntry], bool]] = {}
        self._visibility_version = -1
        # Every call a discovery door makes runs through it: the same policies as on the tool's own surface.
        self.calls = ctx.calls or unlimited(ctx.usage)
        self.code_policy = code or CodePolicy()
        self._stops: list[Callable[[], Awaitable[None]]] = []

    def aliases(self) -> dict[str, Rename]:
        """The renamed tools of every served surface (none before they are published)."""
        served = self.ctx.events.served.value
        if self._aliases is None or self._aliases[0] is not served:
            self._aliases = (served, build_alias_table(served))
        return self._aliases[1]

    def on_stop(self, stop: Callable[[], Awaitable[None]]) -> None:
        self._stops.append(stop)

    async def start(self) -> None:
        self.active = open_active_sets(self.ctx.redis_url)
        await self.catalog.start(self.ctx.events.served.value, skip=SURFACE)

    async def stop(self) -> None:
        for stop in self._stops:
            await stop()
        await self.catalog.stop()
        await self.active.close()

    def status(self) -> dict[str, Any]:
        """How tool_find ranks now, for jarvis_check_status: hybrid, lexical while embedding, or lexical and why."""
        dense = self.catalog.dense
        answer: dict[str, Any] = {"tools": len(self.catalog.index)}
        if dense is None:
            return {**answer, "search": "lexical", "detail": "dense retrieval is off (discovery_dense=false)"}
        state = dense.status()
        search = "hybrid" if state.state == "ready" else "lexical"
        answer.update(search=search, model=state.state, embedded=state.embedded)
        if state.detail:
            answer["detail"] = state.detail
        elif state.state in ("loading", "embedding"):
            answer["detail"] = "lexical until every tool's vector is ready"
        return answer

    async def connected(self, principal: Principal) -> frozenset[str]:
        """The servers each person uses as themselves that `principal`'s person is ready for: connected with their
        own account, or holding every one of their own keys (none to look up when there are no such servers)."""
        host, person = self.ctx.downstream, person_of(principal)
        if host is None or not person:
            return frozenset()
        personal = host.personal
        accounts = await personal.connections(person) if personal.plans else []
        keys = await personal.keyed.ready(person)
        return frozenset({c.server for c in accounts if c.state != NEEDS_CONSENT} | keys)

    def live(self, entry: ToolEntry, connected: frozenset[str] | None = None) -> ToolEntry:
        """`entry` as it stands now: an installed server that is failing makes its tools not callable; a server each
        person uses as themselves, those of a person not ready for it (`connected`: theirs, where known), with how
        to connect or set their keys. A call still reaches such a tool: it answers the person's consent link, or
        which keys to set. Such a server has no shared process to be failing."""
        host = self.ctx.downstream
        if entry.kind != "server" or host is None or not entry.callable:
            return entry
        if host.personal.serves(entry.source):
            if connected is None or entry.source in connected:
                return entry
            return replace(entry, callable=False, install_hint=_not_ready(entry.source, host.personal.keyed.serves))
        server = host.hosts.get(entry.source)
        if server is None:
            return entry
        snap = server.snapshot()
        if snap.state != "failing":
            return entry
        return replace(
            entry,
            callable=False,
            install_hint=(
                f"server '{entry.source}' is failing ({snap.last_error or 'no error recorded'}); "
                f"jarvis_server action=info name={entry.source} shows why, jarvis_profile action=restart retries it"
            ),
        )

    def key(self, principal: Principal, session_id: str) -> str:
        return session_key(principal.token_id, session_id)

    def search_filter(self, principal: Principal) -> Callable[[ToolEntry], bool] | None:
        """What tool_find hands the index: nothing to check for a caller that may call everything."""
        return None if sees_everything(principal) else self.visible(principal)

    def visible(self, principal: Principal) -> Callable[[ToolEntry], bool]:
        """The caller's filter. Decisions are kept per set of scopes until the catalog changes, so a
        narrowly scoped token does not re-check thousands of entries on every search."""
        version = self.catalog.index.version
        if version != self._visibility_version:
            self._visibility.clear()
            self._visibility_version = version
        cached = self._visibility.pop(principal.scopes, None) or visible_to(principal, self.catalog.route)
        self._visibility[principal.scopes] = cached  # most recently used last
        while len(self._visibility) > VISIBILITY_CACHE:
            del self._visibility[next(iter(self._visibility))]
        return cached

    def reaches_a_tool(self, principal: Principal) -> bool:
        """Whether `principal` may call at least one catalogued tool: all a program of theirs could call."""
        if principal.sees_everything:
            return True
        allowed = self.visible(principal)
        return any(allowed(entry) for entry in self.catalog.index.entries())

    def resolve(self, name: str, principal: Principal, *, to_call: bool = False) -> ToolEntry:
        """The entry `name` names for this caller; NotFound (renamed or unknown) never says more than it may. To call
        (`to_call`), a catalogued tool the caller may not call is found too: the pipeline refuses it, naming the
        scopes that would allow it, as every other door does."""
        if name in DISCOVERY_TOOLS:
            raise InvalidArgument(f"'{name}' is a discovery tool: call it directly")
        entry = self.catalog.index.lookup(name)
        if entry is not None and (to_call or self.visible(principal)(entry)):
            return self.live(entry)
        rename = self.aliases().get(name)
        if rename is not None:
            raise NotFound(f"{rename.message()}; from this surface: tool_call name={rename.tool}")
        withheld = self._quarantined(name)
        if withheld is not None and to_call:
            return withheld  # not in the catalog: calling it is refused by the pipeline, saying why
        if withheld is not None and principal.sees_everything:  # described or loaded: an admin hears why
            raise FailedPrecondition(quarantine_message(withheld.source, withheld.tool))
        raise NotFound(f"tool '{shown(name)}' not found: {FIND_HINT}")

    def _quarantined(self, name: str) -> ToolEntry | None:
        """The quarantined tool of an installed server that `name` names (never in the catalog), as a call reaches it:
        whoever may call the server's tools hears why it is refused, as on a profile."""
        server, _, tool = name.partition(SEPARATOR)
        running = self.ctx.downstream.hosts.get(server) if self.ctx.downstream is not None and tool else None
        if running is None or tool not in running.tools.quarantined:
            return None
        return ToolEntry(name=name, description="", source=server, kind="server", tool=tool)

    def limit_key(self, name: str, principal: Principal) -> str | None:
        """The rate limiter's key for a call of `name` from this surface: what `resolve` finds, named as its own
        surface names it (a Jarvis tool, or a gateway's sub-tool as its gateway); None for a name this caller
        cannot call (unknown, hidden or a discovery tool), so such names share one key."""
        if name in DISCOVERY_TOOLS:
            return None
        entry = self.catalog.index.lookup(name)
        if entry is None or not self.visible(principal)(entry):
            return None
        route = self.catalog.route(entry.name)
        return route[1].name if route is not None else entry.name

    def ensure_callable(self, entry: ToolEntry) -> None:
        if not entry.callable:
            raise FailedPrecondition(f"'{entry.name}' cannot be called: {entry.install_hint}")

    def output_schema(self, entry: ToolEntry) -> dict[str, Any] | None:
        """The tool's output schema where Jarvis knows it: a Jarvis tool's own, or a started server's listing."""
        route = self.catalog.route(entry.name)
        if route is not None and not entry.gateway:
            return route[1].to_mcp().output_schema
        host = self.ctx.downstream
        server = host.hosts.get(entry.source) if host is not None and entry.kind == "server" else None
        schema = server.tools.tools.get(entry.tool, {}).get("outputSchema") if server is not None else None
        return schema if isinstance(schema, dict) else None

    async def active_names(self, caller: Caller) -> set[str]:
        """The session's active tool names for display; empty (not an error) when the store is down."""
        if caller.session is None:
            return set()
        try:
            return set(await self.active.get(caller.session))
        except Unavailable as exc:
            log.warning("active tools unavailable: %s", exc)
            return set()

    async def active_entries(self, caller: Caller, principal: Principal) -> list[ToolEntry]:
        """The session's active tools that still exist and that this caller may still call."""
        if caller.session is None:
            return []
        allowed = self.visible(principal)
        entries = (self.catalog.index.get(n) for n in await self.active.get(caller.session))
        return [e for e in entries if e is not None and e.callable and allowed(e)]

    def mcp_tool(self, entry: ToolEntry) -> types.Tool:
        """How an active tool appears in tools/list: a Jarvis tool exactly as its own surface lists it."""
        route = self.catalog.route(entry.name)
        if route is not None and not entry.gateway:
            return route[1].to_mcp()
        return types.Tool(name=entry.name, description=entry.description, input_schema=entry.input_schema)

    def route(self, entry: ToolEntry, arguments: dict[str, Any] | None, principal: Principal) -> Route:
        """What a call of `entry` reaches: a Jarvis tool as its own surface runs it (a gateway's sub-tool as that
        gateway's call), or a downstream server, shared or the caller's own."""
        route = self.catalog.route(entry.name)
        if route is not None:
            surface, tool = route
            if entry.gateway:
                return JarvisToolRoute(
                    tool, surface, {"tool": entry.tool, "arguments": arguments or {}}, backend="subtool"
                )
            return JarvisToolRoute(tool, surface, dict(arguments or {}))
        if entry.kind == "server" and self.ctx.downstream is not None:
            return route_to(self.ctx.downstream, entry, principal)
        raise FailedPrecondition(f"'{entry.name}' cannot be called: {entry.install_hint or 'no route to it'}")

    async def call(
        self, entry: ToolEntry, arguments: dict[str, Any] | None, principal: Principal, *, gated: bool = False
    ) -> types.CallToolResult:
        """Call a catalogued tool for `principal` through the call pipeline, as its own surface would (`gated`: the
        HTTP gate took the call's rate already, as it does for `tool_call` and a loaded tool called by name)."""
        self.ensure_callable(entry)
        route = self.route(entry, arguments, principal)
        args = route.arguments if isinstance(route, JarvisToolRoute) else dict(arguments or {})
        result = await self.calls.run(ToolCall(principal, SURFACE, entry.name, args, gated=gated), route)
        assert isinstance(result, types.CallToolResult), "discovery's routes answer CallToolResults"
        return result


@dataclass(frozen=True)
class ToolDescription:
    """Everything an agent needs to call a catalogued tool."""

    name: str
    description: str
    input_schema: dict[str, Any]  # the tool's own JSON Schema, as its server declares it
    active: bool
    callable: bool
    category: str
    keywords: list[str]
    source: str
    call: str | None = None
    install_hint: str | None = None


def describe(entry: ToolEntry, active: bool) -> ToolDescription:
    call = install_hint = None
    if entry.callable:
        call = f"tool_call with name={entry.name}" + ("" if active else ", or tool_load it first")
        if entry.call:
            call += f"; on the {entry.gateway} surface: {entry.call}"
    else:
        install_hint = entry.install_hint
    return ToolDescription(
        name=entry.name,
        description=entry.description,
        input_schema=entry.input_schema,
        active=active,
        callable=entry.callable,
        category=entry.category,
        keywords=list(entry.keywords),
        source=entry.source,
        call=call,
        install_hint=install_hint,
    )


def _not_ready(server: str, keyed: Callable[[str], bool]) -> str:
    """How a person not ready for a server they use as themselves gets ready: their keys, or their account."""
    if keyed(server):
        return (
            f"server '{server}' runs with each person's own keys, which you have not set yet: "
            f"jarvis_server action=connect name={server} env={{...}} sets yours (a call says which)"
        )
    return (
        f"server '{server}' is used with your own account, which you have not connected yet: "
        f"jarvis_server action=connect name={server} gives your link (a call gives it too)"
    )
