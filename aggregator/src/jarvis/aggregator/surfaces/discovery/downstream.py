"""Calls to installed downstream servers' tools from the discovery surface, through the aggregator's host."""

from __future__ import annotations

import time
from typing import Any

import jsonschema
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types.methods import is_input_required
from pydantic import ValidationError

from jarvis.aggregator import audit
from jarvis.aggregator.discovery.entry import ToolEntry
from jarvis.aggregator.downstream.auth.person import person_of
from jarvis.aggregator.downstream.hosting.host import DownstreamHost
from jarvis.aggregator.mcp_server import Binding
from jarvis.aggregator.tooling.principal import Principal
from jarvis.common.errors import FailedPrecondition, InvalidArgument, JarvisError

SURFACE = "discovery"


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


async def call_downstream(
    host: DownstreamHost, entry: ToolEntry, arguments: dict[str, Any] | None, binding: Binding, principal: Principal
) -> types.CallToolResult:
    """Forward `principal`'s tools/call to the server that owns `entry`, starting it if needed (audited): the host
    decides as for a profile's call (quarantine; a server each person connects to runs on the caller's own
    connection, or answers their consent link)."""
    args = dict(arguments or {})
    check_arguments(entry, args)
    person = person_of(principal)
    started, outcome = time.perf_counter(), "error"
    try:
        raw = await host.call_tool(entry.source, {"name": entry.tool, "arguments": args}, person=person)
        if is_input_required(raw):
            raise FailedPrecondition(
                f"server '{entry.source}' asks for input to finish {entry.tool} (a 2026-07-28 input-required "
                "result), which tool_call and code_run cannot pass on to you: call the tool on a profile that holds "
                f'the server (jarvis_profile action=create name=… servers=["{entry.source}"], then '
                "/mcp/profile/<name>)"
            )
        result = types.CallToolResult.model_validate(raw, by_name=False)
        outcome = "error" if result.is_error else "ok"
        return result
    except MCPError as exc:
        raise FailedPrecondition(f"server '{entry.source}' refused {entry.tool}: {exc.error.message}") from None
    except ValidationError:
        raise JarvisError(f"server '{entry.source}' returned an invalid result for {entry.tool}") from None
    finally:
        elapsed = time.perf_counter() - started
        # Bounded labels: every downstream tool counts under one tool name, and under its installed server.
        binding.metrics.downstream_call(SURFACE, host.server_label(entry.source), outcome, elapsed)
        # The server's own schema once it has started: a catalogued tool's entry may not know its parameters yet.
        served = host.tools_of(entry.source, person)
        schema = (served.tools.get(entry.tool, {}).get("inputSchema") if served else None) or entry.input_schema
        binding.usage.record(
            entry.name,
            "",
            outcome == "ok",
            elapsed * 1000,
            audit.fields(principal, SURFACE, args, schema, outcome, entry.source),
        )
