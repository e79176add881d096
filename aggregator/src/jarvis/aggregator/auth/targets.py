"""What the gate asks of the surface a path names: who may come in, and what each tools/call there may do.

A fixed surface (`/mcp`, `/mcp/jarvis`, …) answers from its tools' scopes; a surface on a path pattern (a profile, a
share) decides its own (downstream/proxy/routes.py). The gate sees both through `GateTarget`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from jarvis.aggregator.tooling.json_types import JsonObject
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Decision, Surface
from jarvis.common.errors import JarvisError, PermissionDenied

UNKNOWN_TOOL = "(unknown tool)"


@dataclass(frozen=True)
class CallCheck:
    """One tools/call of the request as the gate judged it."""

    tool: str  # the audit's name for it: the name called
    denial: str | None
    arguments: JsonObject
    schema: JsonObject | None = None  # the tool's input schema, when known here (for the audit's redaction)
    # The tool the call runs, as its own surface names it (for `tool_call`, the tool it calls); None for a name that
    # is no tool here: unknown names share one rate-limit key, so they cannot mint keys.
    key: str | None = None
    decision: Decision | None = None  # the permitted call, decided once: the tool takes it as it is
    # A profile's or share's call is a downstream server's tool: `server` names it where known, for the record.
    downstream: bool = False
    server: str = ""

    @property
    def limit_key(self) -> str:
        return self.key if self.key is not None else UNKNOWN_TOOL


class GateTarget(Protocol):
    name: str
    require_token: bool  # even on loopback

    async def admit(self, principal: Principal) -> str | None:
        """Why `principal` may not use this surface at all (answered 403), or None."""
        ...

    def check_call(self, principal: Principal, name: str, arguments: JsonObject) -> CallCheck: ...


class DynamicSurface(Protocol):
    """A surface on a path pattern rather than a fixed path (profiles, shares): it decides its own scopes."""

    name: str
    require_token: bool

    async def authorize(self, principal: Principal) -> str | None:
        """Why `principal` may not use this surface at all (answered 403), or None."""
        ...

    def deny_call(self, principal: Principal, name: str) -> str | None:
        """Why `principal` may not call tool `name` here, naming the scopes that would allow it, or None."""
        ...

    def has(self, name: str) -> bool:
        """Whether `name` is a tool served here (as far as is known before the call)."""
        ...

    def server_of(self, name: str) -> str:
        """The downstream server whose tool `name` is, as far as is known before the call ("" when unknown)."""
        ...


class FixedTarget:
    require_token = False

    def __init__(self, surface: Surface) -> None:
        self.surface = surface
        self.name = surface.name

    async def admit(self, principal: Principal) -> str | None:
        if principal.may_use_surface(self.name):
            return None
        return f"your token's scopes ({', '.join(principal.scopes)}) do not include the {self.name} surface"

    def check_call(self, principal: Principal, name: str, arguments: JsonObject) -> CallCheck:
        surface = self.surface
        # Discovery's `tool_call` (and a loaded tool called by name) is limited as the tool it runs.
        key = surface.limit_key(principal, name, arguments)
        if not surface.has(name):
            return CallCheck(name, None, arguments, key=key)  # the MCP layer answers unknown, loaded and renamed tools
        tool = surface.get(name)
        try:
            decision = tool.decide(arguments, principal, surface.name)
        except PermissionDenied as refused:  # its text names the scopes that would allow the call, and why
            return CallCheck(name, str(refused), arguments, tool.input_schema, key)
        except JarvisError:
            # Malformed arguments: let the tool answer with the precise error.
            return CallCheck(name, None, arguments, tool.input_schema, key)
        return CallCheck(name, None, arguments, tool.input_schema, key, decision)


class DynamicTarget:
    def __init__(self, dynamic: DynamicSurface) -> None:
        self.dynamic = dynamic
        self.name = dynamic.name
        self.require_token = dynamic.require_token

    async def admit(self, principal: Principal) -> str | None:
        return await self.dynamic.authorize(principal)

    def check_call(self, principal: Principal, name: str, arguments: dict[str, Any]) -> CallCheck:
        known = self.dynamic.has(name)
        return CallCheck(
            name,
            self.dynamic.deny_call(principal, name),
            arguments,
            key=name if known else None,
            downstream=True,
            server=self.dynamic.server_of(name) if known else "",
        )
