"""What a call's name resolves to: one backend, and what the policies need to know of it.

A door resolves the name (a fixed surface by its tools, discovery by its catalog, a profile by its servers) and
hands the pipeline one of these. The kinds are few: a Jarvis tool (a `debug` sub-tool is its gateway's call), and a
downstream server's tool, on the shared connection or on the calling person's own (their OAuth grant or their keys).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import mcp_types as types

from jarvis.aggregator.calls.call import Result, ToolCall
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.request import text_result
from jarvis.aggregator.tooling.tool import Decision, Tool
from jarvis.common.errors import PermissionDenied

Proceed = Callable[[ToolCall], Awaitable[Result]]
Backend = Literal["jarvis", "subtool", "shared", "personal", "keyed"]
JARVIS_BACKENDS = ("jarvis", "subtool")


class ConsentAsker(Protocol):
    """How a call on a person's own OAuth grant asks them to authorize first (downstream/auth/ask.py)."""

    async def ask(self, call: ToolCall, proceed: Proceed) -> Result:
        """`proceed(call)`'s result once the person has authorized; Refused ("needs_consent") with their link where
        they cannot be asked, or declined."""


class Route(Protocol):
    """The backend a call reaches, as the pipeline's steps see it."""

    backend: Backend
    tool: str  # the tool as the audit names it
    action: str  # a Jarvis tool's action ("" for none, or for an action that is not one of the tool's)
    server: str  # the downstream server ("" for Jarvis's own tools): the audit's target and a metric label

    @property
    def schema(self) -> Mapping[str, Any] | None:
        """The tool's input schema, for the audit's redaction."""

    limit_key: str  # the rate limiter's key: the tool as its own surface names it, whatever door reached it

    def denial(self, principal: Principal) -> str | None:
        """Why `principal` may not make this call (naming the scopes that would allow it), or None."""

    def withheld(self) -> str | None:
        """Why nobody may make this call now (a quarantined tool, one a client must not call), or None."""

    def consent(self) -> ConsentAsker | None:
        """How a person's authorization for this call is asked for, when the backend is their own OAuth grant."""

    async def send(self, call: ToolCall) -> Result:
        """The call itself."""


@dataclass
class JarvisToolRoute:
    """One of Jarvis's own tools on `surface` (`arguments` as the tool takes them: a gateway's sub-tool call is the
    gateway's call naming it). `decided` is the gate's decision on this very call, when it made one."""

    tool_def: Tool
    surface: str
    arguments: dict[str, Any]
    decided: Decision | None = None
    backend: Backend = "jarvis"
    server: str = ""

    def __post_init__(self) -> None:
        self.tool = self.tool_def.name
        action = self.arguments.get("action") if self.tool_def.actions else ""
        self.action = action if isinstance(action, str) and action in self.tool_def.action_names else ""
        self.schema: Mapping[str, Any] | None = self.tool_def.input_schema
        self.limit_key = self.tool

    def denial(self, principal: Principal) -> str | None:
        if self.decided is not None and self.decided.covers(self.surface, self.tool, principal, self.arguments):
            return None
        try:
            self.decided = self.tool_def.decide(self.arguments, principal, self.surface)
        except PermissionDenied as refused:
            return str(refused)
        except Exception:  # malformed arguments: the tool's own call answers them precisely
            return None
        return None

    def withheld(self) -> str | None:
        return None

    def consent(self) -> ConsentAsker | None:
        return None

    async def send(self, call: ToolCall) -> Result:
        result = await self.tool_def.call(self.arguments, call.principal, self.surface, self.decided)
        # A handler that already produced a CallToolResult (one tool forwarding to another) is passed through.
        return result if isinstance(result, types.CallToolResult) else text_result(result)


Send = Callable[[ToolCall], Awaitable[Result]]


@dataclass
class DownstreamRoute:
    """Tool `tool` of downstream server `server`, as `deny` and `withhold` judge it for the door that reached it;
    `sender` is how that door speaks to the server (a profile relays rounds and tasks, `tool_call` cannot)."""

    server: str
    tool: str  # the name the audit records (as the door named it)
    backend: Backend
    sender: Send
    deny: Callable[[Principal], str | None]
    withhold: Callable[[], str | None]
    # The schema the audit redacts by, asked once the call is over: a server started by the call has listed it then.
    schema_of: Callable[[], Mapping[str, Any] | None] = lambda: None
    asker: ConsentAsker | None = None  # for a server on each person's own OAuth grant
    limit_key: str = ""
    action: str = field(default="", init=False)

    def __post_init__(self) -> None:
        self.limit_key = self.limit_key or self.tool

    @property
    def schema(self) -> Mapping[str, Any] | None:
        return self.schema_of()

    def denial(self, principal: Principal) -> str | None:
        return self.deny(principal)

    def withheld(self) -> str | None:
        return self.withhold()

    def consent(self) -> ConsentAsker | None:
        return self.asker

    async def send(self, call: ToolCall) -> Result:
        return await self.sender(call)


def scope_refusal(principal: Principal, what: str, where: str, granting: list[str]) -> str:
    """What a call refused for its scopes is told, by every door: what, where, and the scopes that would allow it."""
    return (
        f"your token's scopes ({', '.join(principal.scopes)}) do not allow {what} on {where}; "
        f"a token with one of these scopes may: {', '.join(granting)}"
    )
