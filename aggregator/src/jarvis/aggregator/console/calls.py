"""The console's tool calls: every action a page offers is a tool call through the call pipeline (decision 0065),
as the person, on the surface the tool belongs to, so that scopes, rate limits and the audit are the MCP doors' own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jarvis.aggregator.mcp_server import Binding
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Surface, Tool


@dataclass(frozen=True)
class Answer:
    """A tool's answer: its JSON payload, or the error text the caller would have read."""

    payload: Any
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


class ToolCalls:
    def __init__(self, surfaces: Sequence[Surface], binding: Binding) -> None:
        self.binding = binding
        self.tools: dict[str, tuple[Surface, Tool]] = {}
        for surface in surfaces:
            for tool in surface.tools:
                self.tools.setdefault(tool.name, (surface, tool))

    def may(self, principal: Principal, tool: str, action: str = "", *, project: str = "") -> bool:
        """Whether `principal`'s scopes allow `action` of `tool` (what a page offers; the call is checked again),
        on `project` where given (a project-bound scope allows its project only). A tool without actions
        (`jarvis_check_status`) is asked with no action."""
        found = self.tools.get(tool)
        if found is None:
            return False
        surface, definition = found
        act = next((a for a in definition.actions if a.name == action), None)
        if act is None and definition.actions:
            return False
        return definition.permits(principal, surface.name, act, {"project_id": project} if project else {})

    async def call(self, principal: Principal, tool: str, arguments: dict[str, Any]) -> Answer:
        found = self.tools.get(tool)
        if found is None:
            return Answer(None, f"this Jarvis serves no tool '{tool}'")
        surface, definition = found
        result = await self.binding.run(definition, arguments, principal, surface.name)
        text = "".join(getattr(block, "text", "") for block in result.content)
        if result.is_error:
            return Answer(None, text or "the call failed")
        try:
            return Answer(json.loads(text))
        except ValueError:
            return Answer(text)
