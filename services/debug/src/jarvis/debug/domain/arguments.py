"""Arguments of debug tools: JSON parsing with guidance, checking against `Param`s, schema views."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from typing import Any

from jarvis.common.errors import InvalidArgument
from jarvis.common.params import Param, json_copy, property_schema
from jarvis.common.params import input_schema as params_input_schema
from jarvis.debug.backends.base import ToolSpec

_INTEGER = re.compile(r"^-?\d+$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")


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
    }.get(param.types[0], "")


def example(spec: ToolSpec) -> str:
    """A call that passes the required arguments with placeholder values."""
    args = {p.name: _placeholder(p) for p in spec.params if p.required}
    return f"debug(tool=\"{spec.name}\", arguments='{json.dumps(args)}')"


def describe_param(param: Param) -> dict[str, Any]:
    return property_schema(param)


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
    return params_input_schema(spec.params)


def signature(spec: ToolSpec) -> str:
    """Human-readable expected arguments, for error messages."""

    def line(p: Param) -> str:
        bits = [*p.types]
        if p.enum:
            bits.append("one of " + "|".join(p.enum))
        if p.minimum is not None or p.maximum is not None:
            bits.append(f"{'' if p.minimum is None else p.minimum}..{'' if p.maximum is None else p.maximum}")
        if not p.required and p.default is not None:
            bits.append(f"default {json.dumps(json_copy(p.default))}")
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


def _coerce(param: Param, value: Any) -> Any:
    """The value in the declared type (lenient with the strings agents often send), or None if impossible."""
    kind = param.types[0]  # the gateway admits one type per debug argument
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
        kind = param.types[0]
        problem = f"must be {'an' if kind[0] in 'aeiou' else 'a'} {kind}"
    elif param.enum:
        match = next((e for e in param.enum if e.lower() == str(coerced).lower()), None)
        if match is None:
            problem = f"must be one of {', '.join(param.enum)}"
        coerced = match
    elif param.types[0] in ("integer", "number"):
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
                checked[param.name] = json_copy(param.default)
            continue
        checked[param.name] = _check_value(spec, param, value)
    return checked
