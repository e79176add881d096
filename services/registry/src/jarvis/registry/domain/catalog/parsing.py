"""Helpers shared by the catalog file formats: one entry's problem skips that entry only."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jarvis.common.errors import InvalidArgument
from jarvis.registry.domain.launch import validate_launch
from jarvis.registry.domain.records import CatalogEntry, Launch, Tool


class SkipEntry(Exception):
    """Raised while reading one entry; the entry is reported as skipped with this reason."""


@dataclass
class ParsedCatalog:
    format: str
    entries: list[CatalogEntry] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def checked_launch(launch: Launch) -> Launch:
    try:
        return validate_launch(launch)
    except InvalidArgument as exc:
        raise SkipEntry(exc.message) from exc


def parse_tools(raw: Any) -> tuple[Tool, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise SkipEntry("tools must be a list")
    tools = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            raise SkipEntry(f"tool #{i + 1} has no name")
        tools.append(Tool.from_json(item))
    return tuple(tools)


def text(raw: Any) -> str:
    return raw.strip() if isinstance(raw, str) else ""


def obj(raw: Any) -> dict[str, Any]:
    """`raw` if it is a JSON object, else an empty one: a missing or malformed part reads as absent."""
    return raw if isinstance(raw, dict) else {}


def seq(raw: Any) -> list[Any]:
    return raw if isinstance(raw, list) else []
