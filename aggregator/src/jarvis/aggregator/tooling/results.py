"""Tool results as JSON: view dataclasses become objects (a field that is None is left out, as an unset
protobuf field was), and the JSON Schema of a result type, which pins what agents read."""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import pydantic

from jarvis.aggregator.tooling.json_types import JsonObject


@dataclass(frozen=True)
class ForeignJson:
    """A result another program built (a debug backend, a downstream server) and Jarvis passes on as it is:
    typed as foreign, so that it is the only untyped output and says where its shape is defined."""

    value: Any


class TextAnswer(str):
    """A result that is text to be read as it is, not JSON: TypeScript declarations for code mode
    (codemode/typings.py). The tool's text content is this string itself."""


def jsonable(value: Any) -> Any:
    """`value` with every dataclass turned into a dict, ready for json.dumps."""
    if value is None or isinstance(value, str | int | float):
        return value
    if isinstance(value, ForeignJson):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {name: jsonable(v) for name in _field_names(type(value)) if (v := getattr(value, name)) is not None}
    if isinstance(value, Mapping):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    """A dataclass's field names, looked up once per class (every tool result is made of a few)."""
    return tuple(f.name for f in dataclasses.fields(cls))


_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def result_schema(hint: Any) -> JsonObject:
    """The JSON Schema of what `jsonable` makes of a value of type `hint`."""
    origin = get_origin(hint)
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if hint is Any:
        return {}
    if hint is ForeignJson:
        return {"description": "JSON the called program defines"}
    if hint is TextAnswer:
        return {"type": "string", "description": "text read as it is, not JSON (TypeScript declarations)"}
    if isinstance(hint, type) and issubclass(hint, pydantic.BaseModel):
        return {"title": hint.__name__, "description": "an MCP result, passed on as the called tool answered"}
    if hint is type(None):
        return {"type": "null"}
    if origin is Literal:
        return {"enum": list(get_args(hint))}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        hints = get_type_hints(hint)
        properties, required = {}, []
        for f in dataclasses.fields(hint):
            members = get_args(hints[f.name]) if get_origin(hints[f.name]) in (Union, types.UnionType) else ()
            optional = type(None) in members
            inner = [m for m in members if m is not type(None)]
            properties[f.name] = result_schema(inner[0] if optional and len(inner) == 1 else hints[f.name])
            if not optional:
                required.append(f.name)
        return {"title": hint.__name__, "type": "object", "properties": properties, "required": required}
    if origin in (list, tuple, Sequence):
        args = get_args(hint)
        return {"type": "array", "items": result_schema(args[0]) if args else {}}
    if origin in (dict, Mapping) or hint is dict:
        args = get_args(hint)
        return {"type": "object", "additionalProperties": result_schema(args[1]) if len(args) == 2 else {}}
    if origin in (Union, types.UnionType):
        return {"anyOf": [result_schema(a) for a in get_args(hint)]}
    raise TypeError(f"no JSON form for {hint!r}")
