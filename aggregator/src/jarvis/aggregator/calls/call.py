"""One tool call as every door hands it to the pipeline (decision 0065): who, what, and where from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT

from jarvis.aggregator.tooling.principal import Principal
from jarvis.common.errors import JarvisError

# What a backend answers: a Jarvis tool's result, or a downstream server's raw result (a dict, in the caller's
# protocol version: it may be an input-required result or a task handle, which a profile relays as they are).
Result = types.CallToolResult | dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """A tools/call from any door: the SDK's handler, the direct path, `tool_call`, `code_run`, a profile or share."""

    principal: Principal
    surface: str  # the surface the call came in on, as audit and metrics name it
    name: str  # the tool as the caller named it
    arguments: dict[str, Any]
    # The request's params as the caller sent them (`_meta` included), which a downstream server gets renamed.
    params: dict[str, Any] = field(default_factory=dict)
    # The HTTP gate has already taken this call from its token's rate bucket and counts it in flight (auth/checks.py),
    # so that a refusal there can be an HTTP answer with Retry-After; the pipeline does not take it twice.
    gated: bool = False
    # How the caller is reached during a downstream call: its protocol version, its session for a server's requests
    # (sampling, elicitation, a consent's URL), its progress; absent for calls made from inside Jarvis.
    protocol_version: str | None = None
    caller: Any = None  # the relay's `Caller` (downstream/transport/relay.py), which this layer does not know
    progress: ProgressFnT | None = None

    @property
    def meta(self) -> Any:
        return self.params.get("_meta")

    def sent(self) -> dict[str, Any]:
        """The params as they go on: the caller's own, or the name and arguments of a call made inside Jarvis."""
        return dict(self.params) if self.params else {"name": self.name, "arguments": self.arguments}


def is_error(result: Result) -> bool:
    if isinstance(result, types.CallToolResult):
        return bool(result.is_error)
    return bool(result.get("isError"))


class Refused(JarvisError):
    """A policy's refusal: the caller reads `message`; the record says `outcome`."""

    def __init__(self, outcome: str, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome
