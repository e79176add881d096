"""The one name for a JSON object as Python holds it (a parsed MCP message, a schema, a tool's arguments)."""

from __future__ import annotations

from typing import Any

JsonObject = dict[str, Any]
