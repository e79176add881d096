"""The HTTP headers a request to a server carries in the protocol version it is sent in.

A 2025-era request carries the session's version only. A 2026-07-28 request is self-describing: its
`_meta` holds the caller's version and capabilities, and its headers mirror the body (`Mcp-Method`,
`Mcp-Name`, and an `Mcp-Param-*` per `x-mcp-header` argument of the tool), which the server checks
against the body; the SDK's own codec renders them, as its client does.
"""

from __future__ import annotations

from typing import Any

from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    NAME_BEARING_METHODS,
    encode_header_value,
    find_invalid_x_mcp_header,
    mcp_param_headers,
    x_mcp_header_map,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

TASK_METHODS = ("tasks/get", "tasks/update", "tasks/cancel")
# SEP-2663 extends `Mcp-Name` to the task methods, carrying `taskId`; the SDK's table has the core methods only.
_NAME_KEYS = {**NAME_BEARING_METHODS, **dict.fromkeys(TASK_METHODS, "taskId")}


def headers_for(
    version: str, method: str, params: dict[str, Any] | None, input_schema: dict[str, Any] | None = None
) -> dict[str, str]:
    headers = {MCP_PROTOCOL_VERSION_HEADER: version}
    if version not in MODERN_PROTOCOL_VERSIONS:
        return headers
    params = params or {}
    headers[MCP_METHOD_HEADER] = method
    key = _NAME_KEYS.get(method)
    if key is not None and isinstance(name := params.get(key), str):
        headers[MCP_NAME_HEADER] = encode_header_value(name)
    arguments = params.get("arguments")
    if (
        method == "tools/call"
        and input_schema
        and isinstance(arguments, dict)
        and find_invalid_x_mcp_header(input_schema) is None
    ):
        headers.update(mcp_param_headers(x_mcp_header_map(input_schema), arguments))
    return headers
