"""Binds a Surface to an MCP low-level server: list, call, error mapping, aliases, usage, metrics."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

import mcp_types as types
from mcp.server import Server
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from opentelemetry import trace

from jarvis.aggregator.aliases import Rename
from jarvis.aggregator.calls.call import ToolCall
from jarvis.aggregator.calls.pipeline import CallPipeline
from jarvis.aggregator.calls.routes import JarvisToolRoute
from jarvis.aggregator.metrics import AggregatorMetrics
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.request import decision_of, gated, principal_of, text_result
from jarvis.aggregator.tooling.tool import Decision, Surface, Tool

_LISTED_KEPT = 1024  # sets of scopes whose tools/list is remembered per surface
ServerT = TypeVar("ServerT", bound=Server[Any])


@dataclass(frozen=True)
class Binding:
    """What every surface's MCP server shares: the alias table, the call pipeline, metrics and version."""

    aliases: dict[str, Rename]
    calls: CallPipeline
    metrics: AggregatorMetrics
    version: str

    def renamed(self, name: str, surface: str) -> types.CallToolResult:
        """The answer to a name that is not a tool here: a pointer to the new name, or JSON-RPC -32602."""
        rename = self.aliases.get(name)
        if rename is None:
            raise MCPError(
                types.INVALID_PARAMS, f"unknown tool '{name}'; call tools/list for the tools of the {surface} surface"
            )
        self.metrics.tool_calls.labels(surface, "renamed", "", "error").inc()
        return text_result(rename.message(), is_error=True)

    async def run(
        self,
        tool: Tool,
        arguments: dict[str, Any] | None,
        principal: Principal,
        surface: str,
        decided: Decision | None = None,
        *,
        gated: bool = False,
    ) -> types.CallToolResult:
        """Call `tool` of `surface` through the call pipeline (`gated`: the HTTP gate took its rate already)."""
        args = dict(arguments or {})
        call = ToolCall(principal, surface, tool.name, args, gated=gated)
        result = await self.calls.run(call, JarvisToolRoute(tool, surface, args, decided))
        assert isinstance(result, types.CallToolResult), "a Jarvis tool's route answers a CallToolResult"
        return result


@runtime_checkable
class ServesItself(Protocol):
    """A surface whose MCP server is not a fixed tool list (the discovery surface lists per session)."""

    def build_server(self, binding: Binding) -> Server[Any]: ...


def build_mcp_server(surface: Surface, binding: Binding) -> Server[Any]:
    if isinstance(surface, ServesItself):
        return surface.build_server(binding)
    tools = surface.list_mcp()
    # tools/list shows only the tools the caller's token may call at least one action of (as profiles and discovery
    # do, decision 0019): a person whose role grants one tool sees that tool. Kept per set of scopes.
    listed: dict[tuple[str, ...], list[types.Tool]] = {}

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        principal = principal_of(ctx)
        if principal.sees_everything:
            return types.ListToolsResult(tools=tools)
        visible = listed.get(principal.scopes)
        if visible is None:
            if len(listed) > _LISTED_KEPT:
                listed.clear()
            visible = [t for t in tools if surface.get(t.name).callable_by(principal, surface.name)]
            listed[principal.scopes] = visible
        return types.ListToolsResult(tools=visible)

    async def on_call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        if not surface.has(params.name):
            return binding.renamed(params.name, surface.name)
        tool = surface.get(params.name)
        return await binding.run(
            tool, params.arguments, principal_of(ctx), surface.name, decision_of(ctx), gated=gated(ctx)
        )

    return untraced(
        Server(
            f"jarvis-{surface.name}",
            version=binding.version,
            instructions=surface.instructions or None,
            # Mcp-Param-* headers of a 2026-07-28 call are checked against the tool's schema; without this the
            # SDK finds it by running a whole tools/list per call (a third of such a call's CPU).
            get_tool_input_schema=lambda name: surface.get(name).input_schema if surface.has(name) else None,
            on_list_tools=on_list_tools,
            on_call_tool=on_call_tool,
        )
    )


def untraced(server: ServerT) -> ServerT:
    """`server` without the SDK's OpenTelemetry middleware when nothing could export its spans.

    The SDK wraps every request in a span, a no-op without an OpenTelemetry SDK installed and
    configured, yet about a twentieth of a proxied call's CPU. Jarvis installs no such SDK; where one
    has set a tracer provider before the servers are built, the spans stay.
    """
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        server.middleware = [m for m in server.middleware if not isinstance(m, OpenTelemetryMiddleware)]
    return server
