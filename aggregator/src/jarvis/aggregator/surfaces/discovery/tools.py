"""The five discovery tools (spec 003): tool_find, tool_describe, tool_load, tool_active, tool_call."""

from __future__ import annotations

import json
from typing import Any

from jarvis.aggregator.discovery.text import analyze
from jarvis.aggregator.surfaces.discovery.state import FIND_HINT, Discovery, current_caller, describe, shown
from jarvis.aggregator.tooling import schema as s
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Tool
from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.common.errors import FailedPrecondition, InvalidArgument, JarvisError, NotFound

MAX_QUERY_CHARS = 500
MAX_LIMIT = 50
DEFAULT_LIMIT = 5  # what discovery.default_limit defaults to
MAX_LOAD = 20
# A session's tool list is context every later turn pays for; past this, tool_call is the better tool.
MAX_ACTIVE = 40


def _query(raw: Any, d: Discovery) -> str:
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


async def default_limit(d: Discovery) -> int:
    """`discovery.default_limit` from the registry's config (cached briefly); the built-in default without it."""
    reg = d.ctx.registry
    try:
        entry = await reg.cached(reg.registry.GetConfig, pb.GetConfigRequest(key="discovery.default_limit"))
        value = json.loads(entry.value_json)
    except (JarvisError, ValueError):
        return DEFAULT_LIMIT
    return value if isinstance(value, int) and 1 <= value <= MAX_LIMIT else DEFAULT_LIMIT


def _name(a: dict[str, Any], tool: str) -> str:
    name = a.get("name")
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument(f"{tool} needs 'name': a tool name as tool_find returns it")
    return name.strip()


def _names(a: dict[str, Any]) -> list[str]:
    names = [n.strip() for n in a.get("names") or [] if n.strip()]
    if not names:
        raise InvalidArgument("tool_load needs 'names': a list of tool names as tool_find returns them")
    if len(names) > MAX_LOAD:
        raise InvalidArgument(f"tool_load: {len(names)} names; load at most {MAX_LOAD} at a time")
    return list(dict.fromkeys(names))


def build_tools(d: Discovery) -> list[Tool]:
    async def find(a: dict[str, Any], principal: Principal) -> Any:
        query = _query(a.get("query"), d)
        limit = a.get("limit")
        if limit is None:
            limit = await default_limit(d)
        hits = d.catalog.index.search(query, int(limit), allowed=d.search_filter(principal))
        active = await d.active_names(current_caller()) if hits else set()
        results = []
        for hit in hits:
            e = d.live(hit.entry)
            result: dict[str, Any] = {
                "name": e.name,
                "description": e.description,
                "score": hit.score,
                "active": e.name in active,
                "category": e.category,
                "keywords": list(e.keywords),
                "callable": e.callable,
            }
            if e.call:
                result["call"] = e.call
            if not e.callable:
                result["install_hint"] = e.install_hint
            results.append(result)
        answer: dict[str, Any] = {"query": query, "results": results, "count": len(results)}
        if not results:
            answer["message"] = (
                f"no tool matches '{shown(query)}'; try other words (what the tool acts on, "
                "e.g. 'files', 'servers', 'schedule')"
            )
        return answer

    async def describe_(a: dict[str, Any], principal: Principal) -> Any:
        entry = d.resolve(_name(a, "tool_describe"), principal)
        return describe(entry, entry.name in await d.active_names(current_caller()))

    async def load(a: dict[str, Any], principal: Principal) -> Any:
        entries, problems = [], []
        for name in _names(a):
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
            return {
                "loaded": [],
                "tools": [
                    {"name": e.name, "description": e.description, "input_schema": e.input_schema} for e in entries
                ],
                "message": f"{why}: call these with tool_call(name, arguments)",
            }
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
        return {
            "loaded": new,
            "already_active": [e.name for e in entries if e.name in before],
            "active_count": len(after),
            "message": "tools/list now includes them (announced with notifications/tools/list_changed); "
            "call them by name, or with tool_call if your client does not refresh its list",
        }

    async def active_(_: dict[str, Any], principal: Principal) -> Any:
        caller = current_caller()
        entries = await d.active_entries(caller, principal)
        answer: dict[str, Any] = {
            "active": [{"name": e.name, "description": e.description} for e in entries],
            "count": len(entries),
        }
        if caller.session is None:
            answer["message"] = (
                "this connection keeps no loaded tools (MCP 2026-07-28, or no session): call tools with tool_call"
            )
        elif not entries:
            answer["message"] = f"no tools are active in this session; {FIND_HINT}, then tool_load them"
        return answer

    async def call(a: dict[str, Any], principal: Principal) -> Any:
        entry = d.resolve(_name(a, "tool_call"), principal)
        return await d.call(entry, a.get("arguments"), principal)

    return [
        Tool(
            name="tool_find",
            description="Search every tool Jarvis offers by keywords",
            properties={"query": s.string(), "limit": s.integer(minimum=1, maximum=MAX_LIMIT)},
            handler=find,
            read_only=True,
            idempotent=True,
        ),
        Tool(
            name="tool_describe",
            description="A tool's description and input schema",
            properties={"name": s.string()},
            handler=describe_,
            read_only=True,
            idempotent=True,
        ),
        # Loading changes only this session's tool list, never the outside world: read-only.
        Tool(
            name="tool_load",
            description="Add tools to this session's tools/list",
            properties={"names": s.strings()},
            handler=load,
            read_only=True,
            idempotent=True,
        ),
        Tool(
            name="tool_active",
            description="Tools loaded in this session",
            handler=active_,
            read_only=True,
            idempotent=True,
        ),
        Tool(
            name="tool_call",
            description="Call any tool tool_find found, by name",
            properties={"name": s.string(), "arguments": {"type": "object"}},
            handler=call,
        ),
    ]
