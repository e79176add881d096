"""Stable names on a surface that mixes servers: `<server>__<tool>` (tools, prompts), at most 64 characters, never
shadowing, and `jarvis://<server>/<uri>` for resources and templates (docs/decisions/0038-multi-server-profiles.md)."""

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


URI_PREFIX = "jarvis://"


def namespaced_uri(server: str, uri: str) -> str:
    """`uri` (or URI template) of `server` as a surface that mixes servers shows it.

    The server's URI follows verbatim, whatever its scheme: a template's expressions stay expandable by the
    client, and the server part (registry names hold no `/`) ends at the first `/`, so the mapping reverses.
    """
    return f"{URI_PREFIX}{server}/{uri}"


def split_uri(uri: str) -> tuple[str, str] | None:
    """(server, the server's own URI) of a namespaced URI; None when `uri` is not one."""
    if not uri.startswith(URI_PREFIX):
        return None
    server, slash, rest = uri[len(URI_PREFIX) :].partition("/")
    return (server, rest) if slash and server else None
