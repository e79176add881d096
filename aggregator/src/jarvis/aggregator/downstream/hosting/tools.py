"""The tools a downstream server may serve: normalised, checked against their pins in the registry, and without
those a client must not call (SEP-2243: invalid `x-mcp-header` declarations)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from mcp.shared.inbound import find_invalid_x_mcp_header

from jarvis.aggregator.downstream.hosting.schema import normalise_tool
from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.tooling.json_types import JsonObject
from jarvis.aggregator.views.registry import ToolPinView

log = logging.getLogger(__name__)

# What a pin covers: everything that tells a model what a tool does or how to call it.
PINNED_FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
QUARANTINED = "quarantined"


@dataclass
class ServedTools:
    """Tools by their name on the server. `tools` are safe to list; quarantined ones are withheld; `refused` ones
    (by the rule they break) must never be called, so they are not served at all."""

    tools: dict[str, JsonObject] = field(default_factory=dict)
    quarantined: dict[str, ToolPinView] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    fixes: dict[str, list[str]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.tools)


def pin_definition(tool: JsonObject) -> str:
    """The part of a tool definition that is pinned, as the server sent it (before normalisation)."""
    return json.dumps({k: tool[k] for k in PINNED_FIELDS if k in tool}, sort_keys=True, default=str)


def served(raw_tools: list[JsonObject], pins: dict[str, ToolPinView]) -> ServedTools:
    """Normalise every tool, leave out those no client may call and withhold the quarantined ones."""
    result = ServedTools()
    for raw in raw_tools:
        name = raw["name"]
        # Checked on the schema as the server sent it (as a client of the server would) and before the pin: a tool
        # that can never be called is not worth an approval.
        if (broken := find_invalid_x_mcp_header(raw.get("inputSchema"))) is not None:
            result.refused[name] = broken
            continue
        pin = pins.get(name)
        if pin is not None and pin.state == QUARANTINED:
            result.quarantined[name] = pin
            continue
        tool, problems = normalise_tool(raw)
        result.tools[name] = tool
        if problems:
            result.fixes[name] = problems
    return result


async def check_pins(registry: RegistryGateway, server: str, raw_tools: list[JsonObject]) -> ServedTools:
    """Record what the server serves now; the registry pins new tools and quarantines changed ones.

    Fails closed: if the registry cannot be asked, the start attempt fails (and is retried), because
    serving unchecked definitions is exactly what pinning exists to prevent.
    """
    recorded = await registry.record_tool_pins(server, {t["name"]: pin_definition(t) for t in raw_tools})
    pins = {p.tool: p for p in recorded}
    result = served(raw_tools, pins)
    for name, broken in result.refused.items():
        log.warning(
            "tool %s of downstream server %s left out: its x-mcp-header declarations are invalid (%s), and a client "
            "must not call such a tool (SEP-2243)",
            name,
            server,
            broken,
            extra={"server": server, "tool": name, "rule": broken},
        )
    for name, pin in result.quarantined.items():
        log.warning(
            "tool %s of downstream server %s quarantined: its definition changed since it was pinned; "
            "approve with `jarvis server approve %s --tool %s`",
            name,
            server,
            server,
            name,
            extra={
                "server": server,
                "tool": name,
                "pinned_sha256": pin.pinned_sha256,
                "seen_sha256": pin.seen_sha256,
                "approve": f"jarvis server approve {server} --tool {name}",
            },
        )
    for name, problems in result.fixes.items():
        log.info(
            "schema of tool %s of downstream server %s normalised: %s",
            name,
            server,
            "; ".join(problems),
            extra={"server": server, "tool": name, "fixes": problems},
        )
    return result


def known_from_pins(pins: list[ToolPinView]) -> dict[str, ServedTools]:
    """What each server served when last seen (its pinned tools), for listing without starting it."""
    by_server: dict[str, list[JsonObject]] = {}
    states: dict[str, dict[str, ToolPinView]] = {}
    for pin in pins:
        definition = json.loads(pin.pinned_json or "{}")
        if isinstance(definition, dict) and isinstance(definition.get("name"), str):
            by_server.setdefault(pin.server, []).append(definition)
            states.setdefault(pin.server, {})[pin.tool] = pin
    return {server: served(tools, states[server]) for server, tools in by_server.items()}


def quarantine_message(server: str, tool: str) -> str:
    return (
        f"tool '{tool}' of server '{server}' is quarantined: its definition changed since it was pinned; "
        f"an admin can review the change (jarvis_server action=info name={server}) and approve it with "
        f"`jarvis server approve {server} --tool {tool}`"
    )


def refused_message(server: str, tool: str, broken: str) -> str:
    return (
        f"tool '{tool}' of server '{server}' is not served: its x-mcp-header declarations are invalid ({broken}), "
        "and a client must not call such a tool (SEP-2243)"
    )


def names_of(tools: ServedTools | None) -> set[str]:
    """The names of the tools in `tools` (none when they are not known)."""
    return set(tools.tools) if tools is not None else set()
