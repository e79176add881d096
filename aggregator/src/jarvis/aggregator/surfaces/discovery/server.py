"""The discovery surface's MCP server: a tools/list per session, active tools callable by name.

Two protocol eras are served differently (ARCHITECTURE §3). A 2025-era session's tools/list is the
five discovery tools plus the tools it loaded, and `tool_load` announces the change with
`notifications/tools/list_changed`. A 2026-07-28 client must see the same tools/list on every
connection, so it always gets the five tools and calls the rest through `tool_call`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from jarvis.aggregator.mcp_server import Binding, untraced
from jarvis.aggregator.surfaces.discovery.code import CODE_RUN, may_run_code
from jarvis.aggregator.surfaces.discovery.state import (
    CURRENT,
    FIND_HINT,
    TOOL_CALL,
    Caller,
    Discovery,
    no_progress,
    shown,
)
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.request import decision_of, gated, principal_of, text_result
from jarvis.aggregator.tooling.tool import Decision, Surface, Tool
from jarvis.common.errors import JarvisError

log = logging.getLogger(__name__)
SESSION_HEADER = "mcp-session-id"


class ListChangingServer(Server[Any]):
    """A low-level server that tells 2025-era clients the truth: its tool list changes.

    The SDK builds the initialize result from `create_initialization_options()` with default
    notification options, which advertise `tools.listChanged: false`; over streamable HTTP there is
    no other place to say otherwise. (2026-07-28 clients get capabilities from `server/discover`,
    where the flag follows `subscriptions/listen`, which this surface does not serve: false, and
    true to what they see.)
    """

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), experimental_capabilities, extensions
        )


def progress_of(ctx: ServerRequestContext[Any]) -> Callable[[float, float | None, str | None], Awaitable[None]]:
    """Progress on this request, sent only when the caller's `_meta` carried a progress token."""
    token = (ctx.meta or {}).get("progress_token")
    if token is None:
        return no_progress
    related = None if ctx.request_id is None else str(ctx.request_id)

    async def report(progress: float, total: float | None = None, message: str | None = None) -> None:
        await ctx.session.send_progress_notification(token, progress, total, message, related_request_id=related)

    return report


def caller_of(ctx: ServerRequestContext[Any], principal: Principal, d: Discovery) -> Caller:
    """Which session a request belongs to (none for 2026-era requests), and how to notify it."""
    progress = progress_of(ctx)
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return Caller(session=None, modern=True, report_progress=progress)
    request = ctx.request
    headers = getattr(request, "headers", None)
    if headers is None:
        session_id: str | None = d.stdio_session  # stdio: the process is the session
    else:
        session_id = headers.get(SESSION_HEADER) or None
    if session_id is None:
        return Caller(session=None, report_progress=progress)
    key = d.key(principal, session_id)
    return Caller(session=key, notify_tools_changed=ctx.session.send_tool_list_changed, report_progress=progress)


# Claude Code defers an MCP server's tools behind its own tool search (the model sees their names, and must search
# before a first call) unless the server lists a tool as always loaded: `_meta` "anthropic/alwaysLoad", the API's
# defer_loading false. These tools are a tool search themselves, sized to be read up front; behind another search they
# cost every session a search before each first use. `_meta` is for the client (the model never reads it); clients
# that do not know the key ignore it. Tools a session loads (tool_load) are left to the client to place.
ALWAYS_LOAD = {"anthropic/alwaysLoad": True}


def always_loaded(tool: types.Tool) -> types.Tool:
    return tool.model_copy(update={"meta": {**(tool.meta or {}), **ALWAYS_LOAD}})


async def through_door(
    tool: Tool, arguments: dict[str, Any] | None, principal: Principal, surface: str, decided: Decision | None
) -> types.CallToolResult:
    """`tool_call` itself: its own arguments checked (a refusal of them is its answer), then the call it names."""
    try:
        result = await tool.call(arguments, principal, surface, decided)
    except JarvisError as exc:
        return text_result(str(exc), is_error=True)
    return result if isinstance(result, types.CallToolResult) else text_result(result)


def build_server(surface: Surface, d: Discovery, binding: Binding) -> Server[Any]:
    own = [always_loaded(tool) for tool in surface.list_mcp()]

    @asynccontextmanager
    async def lifespan(_: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        # Entered once per process (the HTTP session manager, or stdio's server.run), never per session.
        await d.start()
        try:
            yield {}
        finally:
            await d.stop()

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        principal = principal_of(ctx)
        caller = caller_of(ctx, principal, d)
        try:
            active = await d.active_entries(caller, principal)
        except JarvisError as exc:
            # Redis down: the five tools still work (tool_call reaches everything), so list those.
            log.warning("active tools unavailable for tools/list: %s", exc)
            active = []
        # code_run is listed only to a caller it would run for (not to a token that may call no tool, nor where it
        # is turned off for the token), as the fixed surfaces list only what a token may call.
        offered = own if may_run_code(d, principal) else [t for t in own if t.name != CODE_RUN]
        return types.ListToolsResult(tools=offered + [d.mcp_tool(e) for e in active])

    async def on_call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        principal = principal_of(ctx)
        caller = caller_of(ctx, principal, d)
        if surface.has(params.name):
            token = CURRENT.set(caller)
            tool, decided = surface.get(params.name), decision_of(ctx)
            try:
                if tool.name == TOOL_CALL:  # a door, not a tool: the call it makes is the one the pipeline records
                    return await through_door(tool, params.arguments, principal, surface.name, decided)
                return await binding.run(tool, params.arguments, principal, surface.name, decided, gated=gated(ctx))
            finally:
                CURRENT.reset(token)
        try:
            active = {e.name: e for e in await d.active_entries(caller, principal)}
        except JarvisError as exc:
            return text_result(str(exc), is_error=True)
        entry = active.get(params.name)
        if entry is not None:
            try:
                return await d.call(entry, params.arguments, principal, gated=gated(ctx))
            except JarvisError as exc:
                return text_result(str(exc), is_error=True)
        if params.name in binding.aliases:
            return binding.renamed(params.name, surface.name)
        known = d.catalog.index.get(params.name)
        if known is not None and d.visible(principal)(known):
            return text_result(
                f"tool '{known.name}' is not loaded in this session: tool_load it, or call it "
                f"with tool_call name={known.name}",
                is_error=True,
            )
        # Neither loaded, nor renamed, nor visible: an unknown tool, which MCP answers with -32602.
        raise MCPError(types.INVALID_PARAMS, f"unknown tool '{shown(params.name)}': {FIND_HINT}")

    return untraced(
        ListChangingServer(
            f"jarvis-{surface.name}",
            version=binding.version,
            instructions=surface.instructions or None,
            lifespan=lifespan,
            on_list_tools=on_list_tools,
            on_call_tool=on_call_tool,
        )
    )
