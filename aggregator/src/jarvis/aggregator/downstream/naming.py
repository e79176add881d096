"""Stable names for downstream tools: `<server>__<tool>`, at most 64 characters, never shadowing."""

from __future__ import annotations

import hashlib
import re

MAX_TOOL_NAME = 64  # what MCP clients accept (SEP-986; several clients reject longer names)
SEPARATOR = "__"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_HASH_LENGTH = 8


def namespaced(server: str, tool: str) -> str:
    """The catalog name of `tool` of `server`.

    Names that fit are kept as they are. Longer names, or ones with characters clients reject, are
    cut and given a hash of the full original: deterministic across restarts and replicas, and two
    servers exporting the same tool get different names because the server name is part of it.
    """
    raw = f"{server}{SEPARATOR}{tool}"
    if len(raw) <= MAX_TOOL_NAME and not _UNSAFE.search(raw):
        return raw
    digest = hashlib.sha256(raw.encode()).hexdigest()[:_HASH_LENGTH]
    head = _UNSAFE.sub("_", raw)[: MAX_TOOL_NAME - _HASH_LENGTH - 1]
    return f"{head}_{digest}"
