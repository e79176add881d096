"""What the orchestrator's tools share: the runtime client (or why there is none) and terse schema parts."""

from __future__ import annotations

import json
from typing import Any

from google.protobuf.message import Message

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.gateways.registry import to_dict
from jarvis.aggregator.gateways.runtime import RuntimeGateway
from jarvis.aggregator.tooling import schema as s
from jarvis.common.errors import FailedPrecondition, InvalidArgument

NO_RUNTIME = (
    "the runtime service is not part of this deployment: run it (`jarvis serve runtime`) and set "
    "JARVIS_AGGREGATOR_RUNTIME_TARGET to its host:port"
)

PROJECT_ID = s.string()
WORKSPACE_ID = s.string()
SESSION_ID = s.string()


def runtime(ctx: ToolContext) -> RuntimeGateway:
    if ctx.runtime is None:
        raise FailedPrecondition(NO_RUNTIME)
    return ctx.runtime


def need(args: dict[str, Any], *names: str, tool: str) -> None:
    """Required parameters of single-purpose tools (action tools declare theirs on the Action)."""
    missing = [n for n in names if args.get(n) in (None, "", [])]
    if missing:
        raise InvalidArgument(f"{tool} requires {', '.join(repr(m) for m in missing)}")


def as_dict(message: Message) -> dict[str, Any]:
    return to_dict(message)


def event_dict(event: Message) -> dict[str, Any]:
    """An event with its payload as JSON rather than a string inside a string."""
    out = to_dict(event)
    raw = out.pop("payload_json", "")
    try:
        out["payload"] = json.loads(raw) if raw else None
    except ValueError:
        out["payload"] = raw
    return out
