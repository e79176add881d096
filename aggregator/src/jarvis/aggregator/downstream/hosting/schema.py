"""Normalises downstream tool definitions, so one server's bad schema cannot break a whole tools/list."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema

from jarvis.aggregator.tooling.json_types import JsonObject

EMPTY_OBJECT: JsonObject = {"type": "object"}


def normalise_input_schema(raw: Any) -> tuple[JsonObject, list[str]]:
    """A valid object schema for the tool's arguments, and what had to be fixed (for status and logs).

    MCP requires `"type": "object"` at the root; a schema without it, or one that is not a valid
    JSON Schema at all, fails validation of the entire tools/list answer in strict clients.
    """
    problems: list[str] = []
    if not isinstance(raw, dict):
        return dict(EMPTY_OBJECT), [f"inputSchema was {type(raw).__name__}, not an object; accepting any arguments"]
    schema: JsonObject = copy.deepcopy(raw)
    if schema.get("type") != "object":
        if "type" in schema:
            problems.append(f"inputSchema type was {schema['type']!r}; replaced by 'object'")
        else:
            problems.append("inputSchema had no type; set to 'object'")
        schema["type"] = "object"
    if "properties" in schema and not isinstance(schema["properties"], dict):
        problems.append("inputSchema properties was not an object; dropped")
        del schema["properties"]
    required = schema.get("required")
    if required is not None and not (isinstance(required, list) and all(isinstance(r, str) for r in required)):
        problems.append("inputSchema required was not a list of names; dropped")
        del schema["required"]
    reason = _schema_error(schema)
    if reason is not None:
        problems.append(f"inputSchema is not a valid JSON Schema ({reason}); accepting any arguments")
        return dict(EMPTY_OBJECT), problems
    return schema, problems


def normalise_output_schema(raw: Any) -> tuple[JsonObject | None, list[str]]:
    """The output schema if it is a valid object schema; else None (results still pass through)."""
    if raw is None:
        return None, []
    if not isinstance(raw, dict) or raw.get("type") != "object" or _schema_error(raw) is not None:
        return None, ["outputSchema is not a valid object schema; dropped"]
    return copy.deepcopy(raw), []


def normalise_tool(raw: JsonObject) -> tuple[JsonObject, list[str]]:
    """A tool definition safe to list: schemas fixed, unknown top-level fields kept as they came."""
    tool = dict(raw)
    tool["inputSchema"], problems = normalise_input_schema(raw.get("inputSchema"))
    output, output_problems = normalise_output_schema(raw.get("outputSchema"))
    if output is None:
        tool.pop("outputSchema", None)
    else:
        tool["outputSchema"] = output
    description = tool.get("description")
    if description is not None and not isinstance(description, str):
        tool["description"] = str(description)
        problems.append("description was not a string")
    if "annotations" in tool and not isinstance(tool["annotations"], dict):
        del tool["annotations"]
        problems.append("annotations was not an object; dropped")
    return tool, problems + output_problems


def _schema_error(schema: JsonObject) -> str | None:
    try:
        jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator).check_schema(schema)
    except jsonschema.SchemaError as exc:
        return exc.message[:200]
    except Exception as exc:  # a $schema naming something unknown, or a pathological value
        return f"{exc.__class__.__name__}: {str(exc)[:200]}"
    return None
