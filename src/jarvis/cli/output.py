"""What the command line prints: aligned tables for lists, and catalog files cut into batches for a progress bar."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

BATCH = 200  # catalog entries per import call: a bar that moves, few enough calls to stay fast


def table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]]) -> str:
    """`rows` as text columns; `columns` is (key, heading). Lists are joined with commas, None is '-'."""

    def cell(value: Any) -> str:
        if value is None or value == "":
            return "-"
        if isinstance(value, list):
            return ",".join(str(v) for v in value) or "-"
        return str(value)

    cells = [[cell(row.get(key)) for key, _ in columns] for row in rows]
    widths = [max([len(heading)] + [len(r[i]) for r in cells]) for i, (_, heading) in enumerate(columns)]
    lines = ["  ".join(h.upper().ljust(w) for (_, h), w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines)


def catalog_batches(content: bytes) -> tuple[list[bytes], int] | None:
    """The file cut into files of at most BATCH servers each (same envelope), and the server count.

    None when the file is not a list of servers or an object with a "servers" list (a single
    server.json, or not JSON at all): it is then imported in one call, which reports any error.
    """
    try:
        data = json.loads(content.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    envelope: dict[str, Any] | None = None
    if isinstance(data, list):
        items = data
    elif isinstance(data, dict) and isinstance(data.get("servers"), list):
        items, envelope = data["servers"], data
    else:
        return None
    if len(items) <= BATCH:
        return None
    parts = (items[i : i + BATCH] for i in range(0, len(items), BATCH))
    batches = [json.dumps(part if envelope is None else {**envelope, "servers": part}).encode() for part in parts]
    return batches, len(items)
