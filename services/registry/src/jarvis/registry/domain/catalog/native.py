"""Jarvis's own catalog format, used for the bundled catalog and for hand-written files."""

from __future__ import annotations

from typing import Any

from jarvis.registry.domain.catalog.parsing import (
    ParsedCatalog,
    SkipEntry,
    checked_launch,
    obj,
    parse_tools,
    seq,
    text,
)
from jarvis.registry.domain.names import is_valid_name
from jarvis.registry.domain.records import CatalogEntry, Launch

FORMAT = "jarvis"
MARKER = "jarvis-catalog"


def looks_like(data: Any) -> bool:
    return isinstance(data, dict) and data.get("format") == MARKER


def parse(data: Any) -> ParsedCatalog:
    parsed = ParsedCatalog(FORMAT)
    for i, raw in enumerate(seq(obj(data).get("servers"))):
        label = text(raw.get("name")) if isinstance(raw, dict) else ""
        try:
            parsed.entries.append(_entry(raw))
        except SkipEntry as exc:
            parsed.skipped.append(f"{label or f'#{i + 1}'}: {exc}")
    return parsed


def _entry(raw: Any) -> CatalogEntry:
    if not isinstance(raw, dict):
        raise SkipEntry("not a JSON object")
    name = text(raw.get("name")).lower()
    if not is_valid_name(name):
        raise SkipEntry("name is missing or not a valid name (letters, digits, '.', '_', '-')")
    try:
        launch = Launch.from_json(raw.get("launch") or {})
    except (ValueError, TypeError) as exc:
        raise SkipEntry(f"launch is invalid ({exc})") from exc
    required = raw.get("requiredEnv") or []
    if not isinstance(required, list) or not all(isinstance(v, str) for v in required):
        raise SkipEntry("requiredEnv must be a list of variable names")
    return CatalogEntry(
        name=name,
        launch=checked_launch(launch),
        title=text(raw.get("title")),
        description=text(raw.get("description")),
        category=text(raw.get("category")),
        homepage=text(raw.get("homepage")),
        required_env=tuple(required),
        tools=parse_tools(raw.get("tools")),
    )
