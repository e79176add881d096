"""Terse JSON-schema fragments: every byte here is paid by every agent on every session."""

from __future__ import annotations

from typing import Any

JsonObject = dict[str, Any]


def string(description: str = "", enum: list[str] | None = None) -> JsonObject:
    schema: JsonObject = {"type": "string"}
    if enum:
        schema["enum"] = enum
    if description:
        schema["description"] = description
    return schema


def strings(description: str = "") -> JsonObject:
    schema: JsonObject = {"type": "array", "items": {"type": "string"}}
    if description:
        schema["description"] = description
    return schema


def boolean(description: str = "") -> JsonObject:
    schema: JsonObject = {"type": "boolean"}
    if description:
        schema["description"] = description
    return schema


def integer(description: str = "", minimum: int | None = None, maximum: int | None = None) -> JsonObject:
    schema: JsonObject = {"type": "integer"}
    if minimum is not None:
        schema["minimum"] = minimum
    if maximum is not None:
        schema["maximum"] = maximum
    if description:
        schema["description"] = description
    return schema


def string_map(description: str = "", nullable: bool = False) -> JsonObject:
    values: JsonObject = {"type": ["string", "null"] if nullable else "string"}
    schema: JsonObject = {"type": "object", "additionalProperties": values}
    if description:
        schema["description"] = description
    return schema
