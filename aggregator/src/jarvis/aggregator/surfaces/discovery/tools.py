"""The discovery tools (spec 003): tool_find, tool_describe, tool_load, tool_active, tool_call, and code_run."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Annotated, Any, Literal

import mcp_types as types

from jarvis.aggregator.codemode.typescript import accessor
from jarvis.aggregator.codemode.typings import Typed, Untyped, typings
from jarvis.aggregator.discovery.entry import Hit, ToolEntry
from jarvis.aggregator.discovery.text import analyze
from jarvis.aggregator.surfaces.discovery.code import CODE_RUN, Code, CodeMode
from jarvis.aggregator.surfaces.discovery.state import (
    FIND_HINT,
    SURFACE,
    Discovery,
    ToolDescription,
    current_caller,
    describe,
    shown,
)
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.results import TextAnswer
from jarvis.aggregator.tooling.tool import Tool
from jarvis.common.errors import FailedPrecondition, InvalidArgument, JarvisError, NotFound
from jarvis.common.params import Arg, NoParams

MAX_QUERY_CHARS = 500
MAX_LIMIT = 50
DEFAULT_LIMIT = 5  # what discovery.default_limit defaults to
MAX_LOAD = 20
# A session's tool list is context every later turn pays for; past this, tool_call is the better tool.
MAX_ACTIVE = 40


def _query(raw: str | None, d: Discovery) -> str:
    query = str(raw or "").strip()
    if not query:
        raise InvalidArgument("tool_find needs a query: a few keywords, e.g. 'list servers' or 'read file'")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidArgument(
            f"tool_find: query is {len(query)} characters; keep it under {MAX_QUERY_CHARS} "
            "(a few keywords find more than a paragraph)"
        )
    if not analyze(query) and d.catalog.index.lookup(query) is None:
        raise InvalidArgument(
            f"tool_find: query '{shown(query)}' has no searchable words; use keywords such as "
            "'schedule prompt' or 'github issues'"
        )
    return query


def _no_match(query: str) -> str:
    hint = "try other words (what the tool acts on, e.g. 'files', 'servers', 'schedule')"
    return f"no tool matches '{shown(query)}'; {hint}"


async def default_limit(d: Discovery) -> int:
    """`discovery.default_limit` from the registry's config (cached briefly); the built-in default without it."""
    try:
        value = (await d.ctx.registry.get_config("discovery.default_limit", cached=True)).value
    except (JarvisError, ValueError):
        return DEFAULT_LIMIT
    return value if isinstance(value, int) and 1 <= value <= MAX_LIMIT else DEFAULT_LIMIT


def _name(name: str | None, tool: str) -> str:
    if not name or not name.strip():
        raise InvalidArgument(f"{tool} needs 'name': a tool name as tool_find returns it")
    return name.strip()


def _names(given: list[str] | None) -> list[str]:
    names = [n.strip() for n in given or [] if n.strip()]
    if not names:
        raise InvalidArgument("tool_load needs 'names': a list of tool names as tool_find returns them")
    if len(names) > MAX_LOAD:
        raise InvalidArgument(f"tool_load: {len(names)} names; load at most {MAX_LOAD} at a time")
    return list(dict.fromkeys(names))


# Parameters. None of them is required by the schema: each tool names what is missing in its own words.


Format = Literal["json", "typescript"]


@dataclass(frozen=True)
class Find:
    query: str | None = None
    limit: Annotated[int | None, Arg(minimum=1, maximum=MAX_LIMIT)] = None
    format: Format | None = None  # "typescript": the declarations a code_run program is written against


@dataclass(frozen=True)
class Named:
    name: str | None = None
    format: Format | None = None


@dataclass(frozen=True)
class Load:
    names: list[str] | None = None


@dataclass(frozen=True)
class Call:
    name: str | None = None
    arguments: dict[str, Any] | None = None


# Results


@dataclass(frozen=True)
class Found:
    name: str
    description: str
    score: float
    active: bool
    category: str
    keywords: list[str]
    callable: bool
    call: str | None = None  # the exact call, for a tool behind a gateway (debug)
    install_hint: str | None = None  # for a tool that cannot be called yet


@dataclass(frozen=True)
class FindAnswer:
    query: str
    results: list[Found]
    count: int
    message: str | None = None


@dataclass(frozen=True)
class LoadedTool:
    name: str
    description: str
    input_schema: dict[str, Any]  # the tool's own JSON Schema


@dataclass(frozen=True)
class LoadAnswer:
    loaded: list[str]
    tools: list[LoadedTool] | None = None  # without a session to keep them in: what to call with tool_call
    already_active: list[str] | None = None
    active_count: int | None = None
    message: str = ""


@dataclass(frozen=True)
class ActiveTool:
    name: str
    description: str


@dataclass(frozen=True)
class ActiveAnswer:
    active: list[ActiveTool]
    count: int
    message: str | None = None


class DiscoveryTools:
    """The handlers of the five tools, over one aggregator's discovery state."""

    def __init__(self, d: Discovery) -> None:
        self.d = d

    async def find(self, p: Find, principal: Principal) -> FindAnswer | TextAnswer:
        """The tools that match, as JSON, or with format="typescript" as the declarations a program is written
        against (codemode/typings.py)."""
        if p.format == "typescript":
            query, hits = await self._search(p, principal)
            connected = await self.d.connected(principal) if hits else frozenset()
            return self._typings(query, [self.d.live(hit.entry, connected) for hit in hits])
        return await self.find_json(p, principal)

    async def find_json(self, p: Find, principal: Principal) -> FindAnswer:
        query, hits = await self._search(p, principal)
        active = await self.d.active_names(current_caller()) if hits else set()
        connected = await self.d.connected(principal) if hits else frozenset()
        found = [self._found(self.d.live(hit.entry, connected), hit.score, active) for hit in hits]
        message = None if found else _no_match(query)
        return FindAnswer(query=query, results=found, count=len(found), message=message)

    async def _search(self, p: Find, principal: Principal) -> tuple[str, list[Hit]]:
        query = _query(p.query, self.d)
        limit = p.limit if p.limit is not None else await default_limit(self.d)
        return query, self.d.catalog.index.search(query, limit, allowed=self.d.search_filter(principal))

    def _typings(self, query: str, entries: list[ToolEntry]) -> TextAnswer:
        callable_ = [self._typed(e) for e in entries if e.callable]
        others = [self._untyped(e) for e in entries if not e.callable]
        if not entries:
            header = _no_match(query)
        else:
            header = f'{len(callable_)} of {len(entries)} tools found for "{query}" can be called in code_run'
            header += ": await tools.<name>(args)" if callable_ else ""
        return TextAnswer(typings(header, callable_, others))

    def _typed(self, entry: ToolEntry) -> Typed:
        return Typed(entry.name, entry.description, entry.input_schema, self.d.output_schema(entry))

    @staticmethod
    def _untyped(entry: ToolEntry) -> Untyped:
        return Untyped(entry.name, entry.description, entry.install_hint or "not callable")

    @staticmethod
    def _found(e: ToolEntry, score: float, active: set[str]) -> Found:
        return Found(
            name=e.name,
            description=e.description,
            score=score,
            active=e.name in active,
            category=e.category,
            keywords=list(e.keywords),
            callable=e.callable,
            call=e.call or None,
            install_hint=None if e.callable else e.install_hint,
        )

    async def describe(self, p: Named, principal: Principal) -> ToolDescription | TextAnswer:
        entry = self.d.resolve(_name(p.name, "tool_describe"), principal)
        if p.format == "typescript":
            if not entry.callable:
                return TextAnswer(typings(f"{entry.name} cannot be called yet", [], [self._untyped(entry)]))
            return TextAnswer(typings(f"call it in code_run: await {accessor(entry.name)}(args)", [self._typed(entry)]))
        return describe(entry, entry.name in await self.d.active_names(current_caller()))

    async def load(self, p: Load, principal: Principal) -> LoadAnswer:
        d = self.d
        entries, problems = [], []
        for name in _names(p.names):
            try:
                entry = d.resolve(name, principal)
                d.ensure_callable(entry)
                entries.append(entry)
            except (NotFound, FailedPrecondition, InvalidArgument) as exc:
                problems.append(str(exc))
        if problems:
            # All or nothing: a session never ends up with half of what was asked.
            raise NotFound("nothing was loaded: " + "; ".join(problems))
        caller = current_caller()
        if caller.session is None:
            why = (
                "your client speaks MCP 2026-07-28, whose tool list does not change per connection"
                if caller.modern
                else "this connection has no MCP session to keep tools in"
            )
            return LoadAnswer(
                loaded=[],
                tools=[LoadedTool(e.name, e.description, e.input_schema) for e in entries],
                message=f"{why}: call these with tool_call(name, arguments)",
            )
        before = await d.active.get(caller.session)
        new = [e.name for e in entries if e.name not in before]
        if len(before) + len(new) > MAX_ACTIVE:
            raise InvalidArgument(
                f"nothing was loaded: a session holds at most {MAX_ACTIVE} active tools and "
                f"{len(before)} are active; use tool_call for the rest"
            )
        after = await d.active.add(caller.session, [e.name for e in entries]) if new else before
        if new:
            await caller.notify_tools_changed()
        return LoadAnswer(
            loaded=new,
            already_active=[e.name for e in entries if e.name in before],
            active_count=len(after),
            message="tools/list now includes them (announced with notifications/tools/list_changed); "
            "call them by name, or with tool_call if your client does not refresh its list",
        )

    async def active(self, _: NoParams, principal: Principal) -> ActiveAnswer:
        caller = current_caller()
        entries = await self.d.active_entries(caller, principal)
        message = None
        if caller.session is None:
            message = "this connection keeps no loaded tools (MCP 2026-07-28, or no session): call tools with tool_call"
        elif not entries:
            message = f"no tools are active in this session; {FIND_HINT}, then tool_load them"
        return ActiveAnswer([ActiveTool(e.name, e.description) for e in entries], len(entries), message)

    async def call(self, p: Call, principal: Principal) -> types.CallToolResult:
        entry = self.d.resolve(_name(p.name, "tool_call"), principal, to_call=True)
        # Over HTTP the gate took this call from the bucket of the tool it names (over stdio: the local user, never
        # limited), so the pipeline does not take it again.
        return await self.d.call(entry, p.arguments, principal, gated=True)


def build_tools(d: Discovery) -> list[Tool]:
    handlers = DiscoveryTools(d)
    find = Tool(
        name="tool_find",
        description="Search every tool Jarvis offers by keywords",
        params=Find,
        handler=handlers.find,
        read_only=True,
        idempotent=True,
    )

    async def find_for_code(arguments: dict[str, Any], principal: Principal) -> Any:
        # Through the tool itself, so a program's tool_find is held to the schema a direct one is (its `limit` of
        # at most 50 included): one set of checks whichever door the call comes in by.
        return asdict(await find.call(arguments, principal, SURFACE))

    code = CodeMode(d, find_for_code)
    return [
        find,
        Tool(
            name="tool_describe",
            description="A tool's description and input schema",
            params=Named,
            handler=handlers.describe,
            read_only=True,
            idempotent=True,
        ),
        # Loading changes only this session's tool list, never the outside world: read-only.
        Tool(
            name="tool_load",
            description="Add tools to this session's tools/list",
            params=Load,
            handler=handlers.load,
            read_only=True,
            idempotent=True,
        ),
        Tool(
            name="tool_active",
            description="Tools loaded in this session",
            params=NoParams,
            handler=handlers.active,
            read_only=True,
            idempotent=True,
        ),
        Tool(
            name="tool_call",
            description="Call any tool tool_find found, by name",
            params=Call,
            handler=handlers.call,
        ),
        Tool(
            name=CODE_RUN,
            description="Run a program that calls tools; returns its result",
            params=Code,
            handler=code.run,
        ),
    ]
