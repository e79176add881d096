"""A downstream server's answer in the caller's protocol version, whatever version the server speaks.

Jarvis's one session to a server negotiates the server's version; each caller has its own. A 2026-07-28
caller needs `resultType` on every result (a result without one is a complete result from an older
server: the specification's absent-means-complete bridge) and caching hints on cacheable results. A
2025-era caller needs neither: the SDK's per-version serializer drops 2026-only fields itself.
"""

from __future__ import annotations

from typing import Any, get_args

from mcp.server.caching import CacheHint
from mcp_types.methods import CacheableMethod
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

# Filled only where the server gave none (its own hints win, key by key). Immediately stale and private:
# a server that said nothing promised no freshness, and a surface's listing depends on the caller's token.
CACHE_HINTS: dict[CacheableMethod, CacheHint] = dict.fromkeys(
    get_args(CacheableMethod), CacheHint(ttl_ms=0, scope="private")
)


def for_caller(result: dict[str, Any], caller_version: str | None) -> dict[str, Any]:
    """`result` as the caller's protocol version states it."""
    if caller_version in MODERN_PROTOCOL_VERSIONS and "resultType" not in result:
        return {**result, "resultType": "complete"}
    return result
