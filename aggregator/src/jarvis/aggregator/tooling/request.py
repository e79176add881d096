"""What a tool call carries besides its arguments: the caller the HTTP gate resolved, the JSON-RPC messages
it read, both kept in the ASGI scope; and the text result every tool answers with."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext

from jarvis.aggregator.tooling.principal import LOCAL_ADMIN, NOBODY, Principal
from jarvis.aggregator.tooling.results import jsonable
from jarvis.aggregator.tooling.tool import Decision

PRINCIPAL_SCOPE_KEY = "jarvis.principal"
MESSAGES_SCOPE_KEY = "jarvis.messages"  # the JSON-RPC messages of the body the gate read and replays
BODY_SCOPE_KEY = "jarvis.body"  # that body as it came (a batch of one request is not one request)
DECISION_SCOPE_KEY = "jarvis.decision"  # the gate's decision on the body's one tools/call of a fixed surface


def decision_of(ctx: ServerRequestContext[Any]) -> Decision | None:
    scope = getattr(ctx.request, "scope", None)
    return decision_in(scope if isinstance(scope, dict) else {})


def decision_in(scope: Mapping[str, Any]) -> Decision | None:
    """The gate's decision on the request's tools/call, when it made one the tool can take as it is."""
    decided = scope.get(DECISION_SCOPE_KEY)
    return decided if isinstance(decided, Decision) else None


def gated(ctx: ServerRequestContext[Any]) -> bool:
    """Whether the request passed the HTTP gate, which took its tool call's rate and counts it in flight."""
    scope = getattr(ctx.request, "scope", None)
    return gated_in(scope if isinstance(scope, dict) else {})


def gated_in(scope: Mapping[str, Any]) -> bool:
    return PRINCIPAL_SCOPE_KEY in scope


def principal_of(ctx: ServerRequestContext[Any]) -> Principal:
    """The caller, as the HTTP auth middleware resolved it; stdio callers are the local user."""
    scope = getattr(ctx.request, "scope", None)
    return principal_in(scope if isinstance(scope, dict) else {})


def principal_in(scope: Mapping[str, Any]) -> Principal:
    """The caller the HTTP gate put in an ASGI scope; none there is the local user over stdio, and nobody over HTTP.

    Only the gate decides who an HTTP caller is (for an open loopback aggregator it puts the local admin there
    itself), so an HTTP request that reached a handler without passing it may do nothing at all.
    """
    principal = scope.get(PRINCIPAL_SCOPE_KEY)
    if isinstance(principal, Principal):
        return principal
    return NOBODY if scope.get("type") in ("http", "websocket") else LOCAL_ADMIN


def text_result(payload: Any, *, is_error: bool = False) -> types.CallToolResult:
    text = payload if isinstance(payload, str) else json.dumps(jsonable(payload), separators=(",", ":"), default=str)
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=is_error)
