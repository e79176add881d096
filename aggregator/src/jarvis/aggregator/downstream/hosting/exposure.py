"""What a profile or share over some servers serves: each server's tools under their names there.

A server each person connects to (`servers.oauth`) whose tools nobody's connection has listed yet serves one tool,
`connect`, whose call answers the person's consent link: a client that calls only what tools/list shows can still
reach it. Once anyone has connected, its tools are known (pinned) and listed to everyone.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from jarvis.aggregator.downstream.hosting.naming import namespaced
from jarvis.aggregator.downstream.hosting.tools import ServedTools

EXPOSED_KEPT = 1024  # (servers, prefixed, person) listings kept: one per person for surfaces with per-person servers
CONNECT_TOOL = (
    "connect"  # the one tool of a server each person connects to, before anyone's connection listed its tools
)


@dataclass(frozen=True)
class ExposedTool:
    """A downstream tool as a profile or share surface lists it."""

    name: str  # on the surface: `<server>__<tool>`, or the tool's own name on an unprefixed surface
    server: str
    tool: str  # on the server
    definition: dict[str, Any]


ExposedEntry = tuple[tuple[ServedTools | None, ...], dict[str, ExposedTool]]  # what it was built from, and it


def connect_tool(server: str) -> dict[str, Any]:
    return {
        "name": CONNECT_TOOL,
        "description": (
            f"Connect your own account at '{server}': its tools are listed once you have. Call this for your link "
            f"(or jarvis_server action=connect name={server})."
        ),
        "inputSchema": {"type": "object", "properties": {}},
    }


def exposed_tools(
    servers: tuple[str, ...], sources: tuple[ServedTools | None, ...], prefixed: bool, connects: Collection[str]
) -> dict[str, ExposedTool]:
    """`servers`' tools (`sources`, in order) by their names on the surface; a server in `connects` never seen
    serves CONNECT_TOOL."""
    tools: dict[str, ExposedTool] = {}
    for server, served_tools in zip(servers, sources, strict=True):
        definitions = (served_tools or ServedTools()).tools
        if served_tools is None and server in connects:
            definitions = {CONNECT_TOOL: connect_tool(server)}
        for tool, definition in definitions.items():
            name = namespaced(server, tool) if prefixed else tool
            tools[name] = ExposedTool(name, server, tool, {**definition, "name": name})
    return tools
