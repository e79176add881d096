"""Reading a catalog file: decode, detect its format, hand it to that format's parser."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from jarvis.common.errors import InvalidArgument
from jarvis.registry.domain.catalog import livemcpbench, native, server_json
from jarvis.registry.domain.catalog.parsing import ParsedCatalog

_PARSERS: dict[str, tuple[Callable[[Any], bool], Callable[[Any], ParsedCatalog]]] = {
    server_json.FORMAT: (server_json.looks_like, server_json.parse),
    livemcpbench.FORMAT: (livemcpbench.looks_like, livemcpbench.parse),
    native.FORMAT: (native.looks_like, native.parse),
}
FORMATS = tuple(_PARSERS)


def parse_catalog(content: bytes, source: str, fmt: str = "") -> ParsedCatalog:
    """Entries that could be read, plus 'name: reason' for each that could not."""
    try:
        data = json.loads(content.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise InvalidArgument(f"catalog file '{source}' is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise InvalidArgument(
            f"catalog file '{source}' is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    if fmt and fmt not in _PARSERS:
        raise InvalidArgument(f"unknown catalog format '{fmt}'; use one of {', '.join(FORMATS)}, or empty to detect")
    fmt = fmt or _detect(data, source)
    looks_like, parse = _PARSERS[fmt]
    if not looks_like(data):
        raise InvalidArgument(f"catalog file '{source}' does not have the shape of the {fmt} format")
    parsed = parse(data)
    if not parsed.entries and not parsed.skipped:
        raise InvalidArgument(f"catalog file '{source}' contains no servers")
    return parsed


def _detect(data: Any, source: str) -> str:
    for fmt, (looks_like, _) in _PARSERS.items():
        if looks_like(data):
            return fmt
    raise InvalidArgument(
        f"could not tell the format of catalog file '{source}': expected an official MCP registry server.json "
        "(an object with name and packages or remotes, or a list of them), a LiveMCPBench tools.json (a list of "
        'servers with config.mcpServers), or a Jarvis catalog ({"format": "jarvis-catalog", "servers": [...]})'
    )
