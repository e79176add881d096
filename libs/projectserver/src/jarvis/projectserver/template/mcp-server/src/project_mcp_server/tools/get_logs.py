"""`get_logs`: the newest entries of the application's NDJSON log file, filtered by level.

Read-only: the file is opened with `os.open(path, O_RDONLY)` and read with `os.pread`, nothing
else touches it (no seek on a shared handle, no locks, no rotation), and the server's own
logging goes to stderr only. The file is read backwards in blocks, so a large log costs only
the tail that is needed.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from project_mcp_server.config import ServerConfig
from project_mcp_server.schemas import LOG_LEVELS
from project_mcp_server.tools.base import ToolDef, ToolError, builtin

BLOCK = 64 * 1024
MAX_SCAN = 32 * 1024 * 1024
POLL_SECONDS = 0.1
_RANK = {
    "trace": 0,
    "debug": 10,
    "info": 20,
    "notice": 25,
    "warn": 30,
    "warning": 30,
    "error": 40,
    "err": 40,
    "critical": 50,
    "fatal": 50,
    "panic": 50,
}
_LEVEL_KEYS = ("level", "levelname", "severity", "lvl", "log.level")


def _rank(entry: dict[str, Any]) -> int:
    """The entry's level on the debug=10 … error=40 scale (Python's numeric levels as they are).

    An entry without a recognisable level counts as debug: shown only when everything is asked for.
    """
    for key in _LEVEL_KEYS:
        value = entry.get(key)
        if isinstance(value, str):
            return _RANK.get(value.lower(), _RANK["debug"])
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return _RANK["debug"]


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) else None


def _tail(fd: int, size: int, keep: int, floor: int) -> tuple[list[dict[str, Any]], int, int]:
    """Newest-first scan: up to `keep` entries at or above `floor`; (entries oldest-first, scanned, skipped)."""
    found: list[dict[str, Any]] = []
    scanned = skipped = 0
    end, carry = size, b""
    while end > 0 and len(found) < keep and size - end < MAX_SCAN:
        start = max(0, end - BLOCK)
        chunk = os.pread(fd, end - start, start) + carry
        lines = chunk.split(b"\n")
        carry = lines.pop(0) if start > 0 else b""  # the first line may continue in the previous block
        for raw in reversed(lines):
            if not raw.strip():
                continue
            scanned += 1
            entry = _parse(raw)
            if entry is None:
                skipped += 1
            elif _rank(entry) >= floor:
                found.append(entry)
                if len(found) == keep:
                    break
        end = start
    found.reverse()
    return found, scanned, skipped


def _follow(fd: int, offset: int, seconds: float, floor: int) -> list[dict[str, Any]]:
    """Entries appended after `offset` during the next `seconds` (complete lines only)."""
    new: list[dict[str, Any]] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        size = os.fstat(fd).st_size
        if size <= offset:
            continue
        data = os.pread(fd, size - offset, offset)
        complete = data[: data.rfind(b"\n") + 1]
        offset += len(complete)
        for raw in complete.splitlines():
            entry = _parse(raw) if raw.strip() else None
            if entry is not None and _rank(entry) >= floor:
                new.append(entry)
    return new


def get_logs(config: ServerConfig, level: str, limit: int, follow: bool) -> dict[str, Any]:
    """The newest `limit` entries at `level` or above, oldest first; with `follow`, plus new ones."""
    path: Path | None = config.log_file
    if path is None:
        raise ToolError("no log file is configured; set 'log_file' in mcp-server/project-server.toml")
    if not path.is_file():
        raise ToolError(f"log file {config.relative(path)} does not exist yet")
    floor = _RANK[level]
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        entries, scanned, skipped = _tail(fd, size, limit, floor)
        appended = _follow(fd, size, config.follow_seconds, floor) if follow else []
    finally:
        os.close(fd)
    entries = (entries + appended)[-limit:]
    return {
        "entries": entries,
        "file": config.relative(path),
        "level": level,
        "returned": len(entries),
        "scanned_lines": scanned,
        "unparsable_lines": skipped,
        "followed": len(appended),
    }


def tool(config: ServerConfig) -> ToolDef:
    """The `get_logs` tool over the configured NDJSON log file."""
    assert set(LOG_LEVELS) <= set(_RANK)
    return builtin(
        "get_logs",
        lambda args: get_logs(config, args["level"], args["limit"], args.get("follow", False)),
        read_only=True,
    )
