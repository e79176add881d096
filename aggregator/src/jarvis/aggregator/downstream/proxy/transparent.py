"""Transparency: a surface that stands for exactly one server passes the rest of MCP through too.

A share, and a profile served without name prefixes (one server, listed in
`servers.unprefixed_profiles`), forward resources, prompts and completions to their server as raw
requests, so a client sees the same answers as from the server itself. `logging/setLevel` is answered
as a prefixed profile answers it (logs.py), since Jarvis declares `logging` even for a server that
does not; the caller then hears the server's log lines as the server wrote them.
A prefixed profile mixes several servers: aggregate.py answers these methods for it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from jarvis.aggregator.downstream.proxy.aggregate import Aggregate, caller_session_id
from jarvis.aggregator.downstream.proxy.list_notices import ListChangeNotices
from jarvis.aggregator.downstream.proxy.logs import ServerLogs
from jarvis.aggregator.downstream.proxy.targets import Targets
from jarvis.aggregator.downstream.proxy.versions import for_caller
from jarvis.common.errors import JarvisError

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


def server_params(ctx: ServerRequestContext[Any]) -> dict[str, Any]:
    """The params of the caller's request as they go on to a server (a fresh dict: callers may change it)."""
    raw = dict(ctx.params or {})
    meta = raw.pop("_meta", None) or {}
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        # A 2026-era request describes its caller in `_meta` (version, capabilities): the server needs it.
        # The progress token is the caller's; the dispatcher gives the server's request its own.
        raw["_meta"] = {key: value for key, value in meta.items() if key != "progressToken"}
    return raw


class Forwarding:
    """What the forwarding handlers of one surface reach: its targets, the aggregate answers for a mixed profile,
    the log lines' listeners and the sessions to tell of list changes."""

    def __init__(
        self, targets: Targets, aggregate: Aggregate, server_logs: ServerLogs, notices: ListChangeNotices
    ) -> None:
        self.targets = targets
        self.aggregate = aggregate
        self.server_logs = server_logs
        self.notices = notices

    def install(self, server: Server[Any]) -> None:
        """Register a forwarding handler for every method above on the surface's MCP server."""
        for method, params_type in FORWARDED:
            server.add_request_handler(method, params_type, self._forwarder(method))

    def _forwarder(self, method: str) -> Callable[[ServerRequestContext[Any], Any], Awaitable[dict[str, Any]]]:
        async def forward(ctx: ServerRequestContext[Any], params: Any) -> dict[str, Any]:
            target = self.targets.target_of(ctx)
            if method in LISTINGS:
                self.notices.remember(target, ctx)
            server = self.targets.single_server(target)
            if server is None:
                return await self.aggregate.answer(ctx, target, method)
            raw = server_params(ctx)
            if method == SET_LEVEL:
                # Not the server's to answer: Jarvis declares `logging` whatever the server does, and holds one
                # session to it for every caller, so the level is this caller's, set as on a prefixed profile.
                level = raw.get("level")
                await self.server_logs.set_level(caller_session_id(ctx), ctx.session, (server,), level, prefixed=False)
                return {}
            try:
                result = await self.targets.host.forward(server, method, raw or None, ctx.protocol_version)
            except JarvisError as exc:
                raise MCPError(types.INTERNAL_ERROR, str(exc)) from None
            return for_caller(result, ctx.protocol_version)

        return forward
