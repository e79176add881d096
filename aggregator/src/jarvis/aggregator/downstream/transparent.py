"""Transparency: a surface that stands for exactly one server passes the rest of MCP through too.

A share, and a profile served without name prefixes (one server, listed in
`servers.unprefixed_profiles`), forward resources, prompts, completions and the logging level to
their server as raw requests, so a client sees the same answers as from the server itself. A
prefixed profile mixes several servers; it serves tools only and says so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from jarvis.aggregator.downstream.versions import for_caller
from jarvis.common.errors import JarvisError

if TYPE_CHECKING:
    from jarvis.aggregator.downstream.proxy import ProxySurface

# Method, its params model, and what a surface that stands for several servers answers (None: an error).
FORWARDED: tuple[tuple[str, type[BaseModel], dict[str, Any] | None], ...] = (
    ("resources/list", types.PaginatedRequestParams, {"resources": []}),
    ("resources/templates/list", types.PaginatedRequestParams, {"resourceTemplates": []}),
    ("resources/read", types.ReadResourceRequestParams, None),
    ("resources/subscribe", types.SubscribeRequestParams, None),
    ("resources/unsubscribe", types.UnsubscribeRequestParams, None),
    ("prompts/list", types.PaginatedRequestParams, {"prompts": []}),
    ("prompts/get", types.GetPromptRequestParams, None),
    ("completion/complete", types.CompleteRequestParams, None),
    ("logging/setLevel", types.SetLevelRequestParams, {}),
)


def install(surface: ProxySurface) -> None:
    """Register a forwarding handler for every method above on the surface's MCP server."""
    for method, params_type, mixed in FORWARDED:
        surface.server.add_request_handler(method, params_type, _forwarder(surface, method, mixed))


def _forwarder(
    surface: ProxySurface, method: str, mixed: dict[str, Any] | None
) -> Callable[[ServerRequestContext[Any], Any], Awaitable[dict[str, Any]]]:
    async def forward(ctx: ServerRequestContext[Any], params: Any) -> dict[str, Any]:
        target = surface.target_of(ctx)
        server = surface.single_server(target)
        if server is None:
            if mixed is not None:
                return for_caller(dict(mixed), ctx.protocol_version)
            raise MCPError(
                types.METHOD_NOT_FOUND,
                f"{method} is not served by {surface.kind} '{target}': it "
                "holds several servers, so it serves their tools only (an unprefixed one-server "
                "profile or a share passes everything through)",
            )
        raw = dict(ctx.params or {})
        meta = raw.pop("_meta", None) or {}
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            # A 2026-era request describes its caller in `_meta` (version, capabilities): the server needs it.
            # The progress token is the caller's; the dispatcher gives the server's request its own.
            raw["_meta"] = {key: value for key, value in meta.items() if key != "progressToken"}
        try:
            result = await surface.host.forward(server, method, raw or None, ctx.protocol_version)
            return for_caller(result, ctx.protocol_version)
        except JarvisError as exc:
            raise MCPError(types.INTERNAL_ERROR, str(exc)) from None

    return forward
