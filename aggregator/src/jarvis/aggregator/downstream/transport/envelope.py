"""What a 2026-07-28 request says of its client in `_meta`: Jarvis's own, and the caller's kept out of a request
bridged into a 2025-era session."""

from __future__ import annotations

import mcp_types as types
from mcp_types.version import LATEST_MODERN_VERSION

from jarvis.aggregator.tooling.json_types import JsonObject

CLIENT_INFO = types.Implementation(name="jarvis", version="1")


# What a 2026-07-28 request says of its caller in `_meta`; a server reads it as "this request is of the 2026 era".
_ENVELOPE_PREFIX = "io.modelcontextprotocol/"


def without_envelope(params: JsonObject | None) -> JsonObject | None:
    """`params` for a request bridged into a 2025-era session: the caller's 2026 envelope keys left out of `_meta`
    (a server whose session made the 2025 handshake refuses a request that carries them)."""
    meta = params.get("_meta") if params else None
    if not isinstance(meta, dict) or not any(key.startswith(_ENVELOPE_PREFIX) for key in meta):
        return params
    kept = {key: value for key, value in meta.items() if not key.startswith(_ENVELOPE_PREFIX)}
    stripped = {key: value for key, value in (params or {}).items() if key != "_meta"}
    return {**stripped, "_meta": kept} if kept else stripped


def client_envelope(version: str = LATEST_MODERN_VERSION) -> JsonObject:
    """What Jarvis's own 2026-07-28 requests say of their client in `_meta`."""
    return {
        types.PROTOCOL_VERSION_META_KEY: version,
        types.CLIENT_CAPABILITIES_META_KEY: {},
        types.CLIENT_INFO_META_KEY: CLIENT_INFO.model_dump(exclude_none=True),
    }


def with_envelope(params: JsonObject | None, version: str) -> JsonObject:
    """`params` for a 2026-era request: a request that says nothing of its client (Jarvis's own, or a 2025 caller's
    sent to a server that speaks only 2026-07-28) says Jarvis's, in `version`; a caller's own envelope is kept."""
    meta = (params or {}).get("_meta")
    if isinstance(meta, dict) and types.PROTOCOL_VERSION_META_KEY in meta:
        return params or {}
    # What the request already says (the capabilities Jarvis relays for a 2025-era caller) wins over Jarvis's own.
    return {**(params or {}), "_meta": {**client_envelope(version), **(meta if isinstance(meta, dict) else {})}}
