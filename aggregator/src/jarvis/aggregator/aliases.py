"""The one table of renamed tools: an old name answers with the new tool and action to call."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from jarvis.aggregator.tooling.tool import Surface


@dataclass(frozen=True)
class Rename:
    old: str
    tool: str
    action: str | None
    surface: str

    def message(self) -> str:
        call = f"call '{self.tool}' with action=\"{self.action}\"" if self.action else f"call '{self.tool}'"
        return f"tool '{self.old}' not found: it was renamed; {call} (on the {self.surface} surface)"


# Prefixes earlier releases put before every tool name (spec 003 renamed `go_ent_*`).
LEGACY_PREFIXES = ("go_ent_", "mcpm_")


def build_alias_table(surfaces: Iterable[Surface]) -> dict[str, Rename]:
    """Old per-action names (`jarvis_server_list`, `server_list`, `project_create`) → new tool+action.

    Derived from the tool definitions so a new action gets its old-style name for free.
    """
    table: dict[str, Rename] = {}
    for surface in surfaces:
        for tool in surface.tools:
            stems = {tool.name}
            if tool.name.startswith("jarvis_"):
                stems.add(tool.name.removeprefix("jarvis_"))
            names: dict[str, str | None] = {}
            for stem in stems:
                for action_name in tool.action_names:
                    names[f"{stem}_{action_name}"] = action_name
            for prefix in LEGACY_PREFIXES:
                names[f"{prefix}{tool.name}"] = None
                for old, target in list(names.items()):
                    if not old.startswith(LEGACY_PREFIXES):
                        names[f"{prefix}{old}"] = target
            for old, target in names.items():
                if not surface.has(old):
                    table.setdefault(old, Rename(old, tool.name, target, surface.name))
    return table
