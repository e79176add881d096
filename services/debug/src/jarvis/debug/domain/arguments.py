"""Arguments of debug tools: JSON parsing with guidance, checking against `Param`s, schema views."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from typing import Any

from jarvis.common.errors import InvalidArgument
from jarvis.debug.backends.base import Param, ToolSpec

_INTEGER = re.compile(r"^-?\d+$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")
_JSON_TYPES = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "array": "array",
    "object": "object",
}


def _placeholder(param: Param) -> Any:
    if param.enum:
        return param.enum[0]
    return {
        "string": f"<{param.name}>",
        "integer": param.minimum if param.minimum is not None else 1,
        "number": 1.0,
        "boolean": True,
        "array": [f"<{param.name}>"],
        "object": {},
    }.get(param.type, "")


def example(spec: ToolSpec) -> str:
    """A call that passes the required arguments with placeholder values."""
    args = {p.name: _placeholder(p) for p in spec.params if p.required}
    return f"debug(tool=\"{spec.name}\", arguments='{json.dumps(args)}')"


def describe_param(param: Param) -> dict[str, Any]:
    view: dict[str, Any] = {"type": param.type, "description": param.description}
    if param.enum:
        view["enum"] = list(param.enum)
    if param.minimum is not None:
        view["minimum"] = param.minimum
    if param.maximum is not None:
        view["maximum"] = param.maximum
    if not param.required and param.default is not None:
        view["default"] = _copy_default(param.default)
    return view


def describe_tool(spec: ToolSpec) -> dict[str, Any]:
    """What `list:<category>` shows per tool: required and optional arguments (with defaults), an example."""
    return {
        "name": spec.name,
        "description": spec.description,
        "required": {p.name: describe_param(p) for p in spec.params if p.required},
        "optional": {p.name: describe_param(p) for p in spec.params if not p.required},
        "example": example(spec),
    }


def input_schema(spec: ToolSpec) -> dict[str, Any]:
    """The same arguments as a JSON Schema object (for catalogs that index tools by schema)."""
    properties = {}
    for param in spec.params:
        prop = describe_param(param)
        prop["type"] = _JSON_TYPES[param.type]
        properties[param.name] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    required = [p.name for p in spec.params if p.required]
    if required:
        schema["required"] = required
    return schema


def signature(spec: ToolSpec) -> str:
    """Human-readable expected arguments, for error messages."""

    def line(p: Param) -> str:
        bits = [p.type]
        if p.enum:
            bits.append("one of " + "|".join(p.enum))
        if p.minimum is not None or p.maximum is not None:
            bits.append(f"{'' if p.minimum is None else p.minimum}..{'' if p.maximum is None else p.maximum}")
        if not p.required and p.default is not None:
            bits.append(f"default {json.dumps(_copy_default(p.default))}")
        return f"    {p.name} ({', '.join(bits)}): {p.description}"

    required = [line(p) for p in spec.params if p.required] or ["    (none)"]
    optional = [line(p) for p in spec.params if not p.required] or ["    (none)"]
    return "\n".join(
        [
            f"Expected arguments of {spec.name}:",
            "  required:",
            *required,
            "  optional:",
            *optional,
            f"Example: {example(spec)}",
        ]
    )


def parse_json(text: str, spec: ToolSpec | None) -> dict[str, Any]:
    """The caller's `arguments` string as a dict, or InvalidArgument saying what is wrong and how to fix it."""
    if not text.strip():
        return {}
    shown = example(spec) if spec else 'debug(tool="cloudwatch_list_log_groups", arguments=\'{"prefix": "/aws/"}\')'
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        snippet = text[max(0, exc.pos - 20) : exc.pos + 20]
        hint = ""
        if "'" in text and '"' not in text:
            hint = " JSON needs double quotes around names and strings."
        elif re.search(r"\b(True|False|None)\b", text):
            hint = " JSON spells these true, false and null."
        raise InvalidArgument(
            f"arguments is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno} (near {snippet!r}).{hint} "
            f"Pass a JSON object as a string, e.g. {shown}"
        ) from None
    if not isinstance(value, dict):
        raise InvalidArgument(
            f'arguments must be a JSON object ({{"name": value, ...}}), not a JSON {type(value).__name__}; e.g. {shown}'
        )
    return value


def _copy_default(value: Any) -> Any:
    # Defaults live in frozen specs as tuples; callers get fresh JSON-shaped copies.
    if isinstance(value, tuple | list):
        return [_copy_default(v) for v in value]
    if isinstance(value, dict):
        return {k: _copy_default(v) for k, v in value.items()}
    return value


def _coerce(param: Param, value: Any) -> Any:
    """The value in the declared type (lenient with the strings agents often send), or None if impossible."""
    kind = param.type
    if kind == "string":
        return str(value) if isinstance(value, str | int | float) and not isinstance(value, bool) else None
    if kind == "integer":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return int(value) if isinstance(value, str) and _INTEGER.match(value.strip()) else None
    if kind == "number":
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value
        return float(value) if isinstance(value, str) and _NUMBER.match(value.strip()) else None
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        return {"true": True, "false": False}.get(value.strip().lower()) if isinstance(value, str) else None
    if kind == "array":
        return value if isinstance(value, list) else [value] if isinstance(value, str) else None
    return value if isinstance(value, dict) else None


def _check_value(spec: ToolSpec, param: Param, value: Any) -> Any:
    coerced = _coerce(param, value)
    problem = ""
    if coerced is None:
        problem = f"must be {'an' if param.type[0] in 'aeiou' else 'a'} {param.type}"
    elif param.enum:
        match = next((e for e in param.enum if e.lower() == str(coerced).lower()), None)
        if match is None:
            problem = f"must be one of {', '.join(param.enum)}"
        coerced = match
    elif param.type in ("integer", "number"):
        if param.minimum is not None and coerced < param.minimum:
            problem = f"must be at least {param.minimum}"
        elif param.maximum is not None and coerced > param.maximum:
            problem = f"must be at most {param.maximum}"
    if problem:
        raise InvalidArgument(
            f"{spec.name}: argument '{param.name}' {problem}, got {json.dumps(value)}.\n{signature(spec)}"
        )
    return coerced


def check_arguments(spec: ToolSpec, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments checked against the spec, with defaults filled in; InvalidArgument shows the schema."""
    by_name = {p.name: p for p in spec.params}
    unknown = [name for name in arguments if name not in by_name]
    if unknown:
        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name, list(by_name), n=1, cutoff=0.6)
            hints.append(f"'{name}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
        raise InvalidArgument(
            f"{spec.name}: unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(hints)}.\n{signature(spec)}"
        )
    missing = [p.name for p in spec.params if p.required and arguments.get(p.name) in (None, "", [])]
    if missing:
        raise InvalidArgument(
            f"{spec.name}: missing required argument{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(m) for m in missing)}.\n{signature(spec)}"
        )
    checked: dict[str, Any] = {}
    for param in spec.params:
        value = arguments.get(param.name)
        if value is None:
            if param.default is not None:
                checked[param.name] = _copy_default(param.default)
            continue
        checked[param.name] = _check_value(spec, param, value)
    return checked
