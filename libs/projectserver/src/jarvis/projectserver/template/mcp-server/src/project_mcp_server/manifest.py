"""Checks that `.agent/index.agent.md` documents exactly the tools the server exposes.

Standard library only, so the project's tests (and Jarvis) can run it without the MCP SDK.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

MANIFEST = Path(__file__).resolve().parents[2] / ".agent" / "index.agent.md"
SECTIONS = ("## Tools", "## Introspection Points", "## Lifecycle", "## Extension")
COLUMNS = ["Tool", "Parameters", "Return Type", "Description"]
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def _section(text: str, heading: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in _CELL_SPLIT.split(line.strip())[1:-1]]


def table(text: str) -> tuple[list[str], list[dict[str, str]]]:
    """(header cells, rows as column -> cell) of the table under `## Tools`."""
    rows = [line for line in _section(text, "## Tools") if line.startswith("|")]
    header = _cells(rows[0])
    return header, [dict(zip(header, _cells(r), strict=False)) for r in rows[2:]]


def problems(text: str, tools: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every way the manifest disagrees with `tools` (dicts with name, description, inputSchema)."""
    found = [f"missing section {s!r}" for s in SECTIONS if s not in text.splitlines()]
    if found:
        return found
    found += [f"line {n} ends with spaces" for n, line in enumerate(text.splitlines(), 1) if line != line.rstrip()]
    header, rows = table(text)
    if header != COLUMNS:
        found.append(f"table columns are {header}, expected {COLUMNS}")
    found += [f"row {r.get('Tool')} has {len(r)} cells" for r in rows if len(r) != len(COLUMNS)]
    by_name = {r.get("Tool", "").strip("`"): r for r in rows}
    points = "\n".join(_section(text, "## Introspection Points"))
    expected = {t["name"]: t for t in tools}
    found += [f"manifest lists {name} but the server has no such tool" for name in by_name.keys() - expected.keys()]
    for name, tool in expected.items():
        row = by_name.get(name)
        if row is None:
            found.append(f"tool {name} has no row in ## Tools")
            continue
        if row.get("Description") != tool["description"]:
            found.append(f"{name}: description {row.get('Description')!r} != code {tool['description']!r}")
        if not row.get("Return Type"):
            found.append(f"{name}: no return type")
        schema = tool["inputSchema"]
        for param in schema.get("properties", {}):
            marker = f"`{param}:" if param in schema.get("required", []) else f"`{param}?:"
            if marker not in row.get("Parameters", ""):
                found.append(f"{name}: parameter {param} is not listed as {marker}")
        if f"(`{name}`)" not in points:
            found.append(f"{name}: no bullet in ## Introspection Points")
    return found
