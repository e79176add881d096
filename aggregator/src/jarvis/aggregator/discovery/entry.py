"""What the discovery catalog knows about one tool, and a ranked search result."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from jarvis.aggregator.tooling.json_types import JsonObject

# Where a tool comes from: a Jarvis surface, an installed downstream server, or a catalog entry
# that nobody has installed yet.
Kind = Literal["surface", "server", "catalog"]


@dataclass(frozen=True)
class ToolEntry:
    """One tool in the catalog. `name` is unique across the catalog and is what agents pass around.

    `source` is the surface (`jarvis`, `orchestrator`, …) or the server/catalog entry that owns the
    tool, and `tool` the name the owner knows it by. `context` is the owner's own description
    (a server's summary, a surface's instructions): indexed with a low weight, never shown.
    """

    name: str
    description: str
    source: str
    kind: Kind
    tool: str
    category: str = ""
    keywords: tuple[str, ...] = ()
    input_schema: JsonObject = field(default_factory=lambda: {"type": "object"})
    callable: bool = True
    install_hint: str = ""
    context: str = ""
    # A gateway's sub-tool (the debug tool's `jira_search`): `gateway` is the Jarvis tool that runs it,
    # `call` the exact call that does, e.g. debug(tool="jira_search", arguments='{"jql": "..."}').
    gateway: str = ""
    call: str = ""

    def digest(self) -> str:
        """A fingerprint of everything searchable or shown, to tell a changed entry from an unchanged one."""
        payload = json.dumps(
            [
                self.name,
                self.description,
                self.source,
                self.kind,
                self.tool,
                self.category,
                list(self.keywords),
                self.input_schema,
                self.callable,
                self.install_hint,
                self.context,
                self.gateway,
                self.call,
            ],
            sort_keys=True,
            separators=(",", ":"),
            default=str,
        )
        return hashlib.sha256(payload.encode()).hexdigest()


@dataclass(frozen=True)
class Hit:
    entry: ToolEntry
    score: float


def schema_terms(schema: JsonObject) -> tuple[list[str], list[str]]:
    """Parameter names and string enum values of a JSON schema, nested objects included.

    Parameter names say what a tool acts on (`city`, `repo`, `sql`); enum values name its
    operations (a consolidated tool's `action` enum), so both are worth indexing.
    """
    names: list[str] = []
    enums: list[str] = []
    stack: list[Any] = [schema]
    seen = 0
    while stack and seen < 500:  # bounded: downstream schemas can be large or self-similar
        node = stack.pop()
        seen += 1
        if not isinstance(node, dict):
            continue
        enums.extend(v for v in node.get("enum") or [] if isinstance(v, str))
        properties = node.get("properties")
        if isinstance(properties, dict):
            names.extend(str(k) for k in properties)
            stack.extend(properties.values())
        items = node.get("items")
        if isinstance(items, dict):
            stack.append(items)
        for key in ("anyOf", "oneOf", "allOf"):
            options = node.get(key)
            if isinstance(options, list):
                stack.extend(options)
    return names, enums
