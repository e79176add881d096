"""Calls to installed downstream servers' tools from the discovery surface (`tool_call`, `code_run`, a loaded tool):
the route the call pipeline runs them on."""

from __future__ import annotations

from typing import Any

import jsonschema
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types.methods import is_input_required
from pydantic import ValidationError

from jarvis.aggregator.calls.call import Result, ToolCall
from jarvis.aggregator.calls.routes import DownstreamRoute, Send, scope_refusal
from jarvis.aggregator.discovery.access import DOWNSTREAM_SCOPE, may_call_downstream
from jarvis.aggregator.discovery.entry import ToolEntry
from jarvis.aggregator.downstream.auth.person import person_of
from jarvis.aggregator.downstream.hosting.host import DownstreamHost
from jarvis.aggregator.downstream.hosting.routing import downstream_route
from jarvis.aggregator.tooling.principal import Principal
from jarvis.common import tracing
from jarvis.common.errors import FailedPrecondition, InvalidArgument, JarvisError


def check_arguments(entry: ToolEntry, arguments: dict[str, Any]) -> None:
    """Reject arguments the tool's schema refuses, before starting or bothering its server."""
    try:
        validator = jsonschema.Draft202012Validator(entry.input_schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    except jsonschema.exceptions.SchemaError:
        return  # the server's schema is broken; let the server judge its own arguments
    if error is not None:
        where = ".".join(str(p) for p in error.path)
        raise InvalidArgument(f"{entry.name}: {f'parameter {where!r}: ' if where else ''}{error.message}")


def granting(entry: ToolEntry) -> list[str]:
    """The scopes that let a token call `entry` from this surface, narrowest first."""
    server = entry.source
    return [
        f"{DOWNSTREAM_SCOPE}:{server}:{entry.tool.lower()}",
        f"{DOWNSTREAM_SCOPE}:{server}",
        DOWNSTREAM_SCOPE,
        "admin",
    ]


def deny(entry: ToolEntry, principal: Principal) -> str | None:
    if may_call_downstream(principal, entry):
        return None
    return scope_refusal(principal, entry.name, "the discovery surface", granting(entry))


def sender(host: DownstreamHost, entry: ToolEntry) -> Send:
    """How a discovery door calls the server: its result as a tool result, since `tool_call` and `code_run` can pass on
    neither a JSON-RPC error nor an input-required round."""

    async def send(call: ToolCall) -> Result:
        args = call.arguments
        check_arguments(entry, args)
        params: dict[str, Any] = {"name": entry.tool, "arguments": args}
        meta: dict[str, Any] = {}
        tracing.inject(meta)  # where traced, the server is the child of this call's span (SEP-414)
        if meta:
            params["_meta"] = meta
        try:
            raw = await host.call_tool(entry.source, params, person=person_of(call.principal))
        except MCPError as exc:
            raise FailedPrecondition(f"server '{entry.source}' refused {entry.tool}: {exc.error.message}") from None
        if is_input_required(raw):
            raise FailedPrecondition(
                f"server '{entry.source}' asks for input to finish {entry.tool} (a 2026-07-28 input-required "
                "result), which tool_call and code_run cannot pass on to you: call the tool on a profile that holds "
                f'the server (jarvis_profile action=create name=… servers=["{entry.source}"], then '
                "/mcp/profile/<name>)"
            )
        try:
            return types.CallToolResult.model_validate(raw, by_name=False)
        except ValidationError:
            raise JarvisError(f"server '{entry.source}' returned an invalid result for {entry.tool}") from None

    return send


def route_to(host: DownstreamHost, entry: ToolEntry, principal: Principal) -> DownstreamRoute:
    """The route of a call of `entry` by `principal`: the shared server, or the person's own connection."""
    return downstream_route(
        host,
        entry.source,
        entry.name,
        entry.tool,
        person_of(principal),
        sender(host, entry),
        lambda caller: deny(entry, caller),
        entry.input_schema,
    )
