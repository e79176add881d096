"""Transparency: a surface that stands for exactly one server passes the rest of MCP through too.

A share, and a profile served without name prefixes (one server, listed in
`servers.unprefixed_profiles`), forward resources, prompts, completions and the logging level to
their server as raw requests, so a client sees the same answers as from the server itself; a
2025-era caller whose `logging/setLevel` the server took then hears the server's log lines (logs.py).
A prefixed profile mixes several servers: aggregate.py answers these methods for it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from jarvis.aggregator.downstream.aggregate import caller_session_id
from jarvis.aggregator.downstream.versions import for_caller
from jarvis.common.errors import JarvisError

if TYPE_CHECKING:
    from jarvis.aggregator.downstream.proxy import ProxySurface

SET_LEVEL = "logging/setLevel"
# Method and its params model.
FORWARDED: tuple[tuple[str, type[BaseModel]], ...] = (
    ("resources/list", types.PaginatedRequestParams),
    ("resources/templates/list", types.PaginatedRequestParams),
    ("resources/read", types.ReadResourceRequestParams),
    ("resources/subscribe", types.SubscribeRequestParams),
    ("resources/unsubscribe", types.UnsubscribeRequestParams),
    ("prompts/list", types.PaginatedRequestParams),
    ("prompts/get", types.GetPromptRequestParams),
    ("completion/complete", types.CompleteRequestParams),
    (SET_LEVEL, types.SetLevelRequestParams),
)
# Listings whose 2025-era caller is told when the list changes (as a tools/list caller is).
LISTINGS = frozenset({"resources/list", "resources/templates/list", "prompts/list"})


def install(surface: ProxySurface) -> None:
    """Register a forwarding handler for every method above on the surface's MCP server."""
    for method, params_type in FORWARDED:
        surface.server.add_request_handler(method, params_type, _forwarder(surface, method))


def server_params(ctx: ServerRequestContext[Any]) -> dict[str, Any]:
    """The params of the caller's request as they go on to a server (a fresh dict: callers may change it)."""
    raw = dict(ctx.params or {})
    meta = raw.pop("_meta", None) or {}
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        # A 2026-era request describes its caller in `_meta` (version, capabilities): the server needs it.
        # The progress token is the caller's; the dispatcher gives the server's request its own.
        raw["_meta"] = {key: value for key, value in meta.items() if key != "progressToken"}
    return raw


def _forwarder(
    surface: ProxySurface, method: str
) -> Callable[[ServerRequestContext[Any], Any], Awaitable[dict[str, Any]]]:
    async def forward(ctx: ServerRequestContext[Any], params: Any) -> dict[str, Any]:
        target = surface.target_of(ctx)
        if method in LISTINGS:
            surface.remember(target, ctx)
        server = surface.single_server(target)
        if server is None:
            return await surface.aggregate.answer(ctx, target, method)
        raw = server_params(ctx)
        try:
            result = await surface.host.forward(server, method, raw or None, ctx.protocol_version)
        except JarvisError as exc:
            raise MCPError(types.INTERNAL_ERROR, str(exc)) from None
        if method == SET_LEVEL:  # the server took it: the lines it sends from now on are the caller's to hear
            surface.server_logs.listen(caller_session_id(ctx), ctx.session, server, raw.get("level"))
        return for_caller(result, ctx.protocol_version)

    return forward
