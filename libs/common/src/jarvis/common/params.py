"""Tool arguments, declared one way everywhere: a `Param` per argument, or a dataclass whose typed fields are them.

The aggregator's tools and the debug service's tools both declare their arguments here, and both get from here the
JSON Schema agents read. A dataclass is the usual form: its field types say what each argument is, `Arg`
(in `Annotated`) adds the words and bounds, and a field without a default is a required argument. Every byte of
schema is paid by every agent on every session, so schemas carry only what the declaration says: no titles, no
`anyOf` for optional values, no descriptions nobody wrote.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

JsonObject = dict[str, Any]

# The JSON types an argument may have; a Param of several (e.g. ("array", "string")) accepts any of them.
PARAM_TYPES = ("string", "integer", "number", "boolean", "array", "object", "null")


@dataclass(frozen=True)
class Arg:
    """What a dataclass field's type cannot say: its description and bounds (`Annotated[int, Arg("s", minimum=1)]`)."""

    description: str = ""
    minimum: int | None = None
    maximum: int | None = None
    # A default worth its bytes in the schema (agents read it); the dataclass field's default still applies.
    shown_default: Any = None


@dataclass(frozen=True)
class Param:
    """One argument. `type` is one of PARAM_TYPES or a tuple of them; `items` and `values` type an array's items
    and an object's values; `default` applies when the argument is omitted."""

    name: str
    type: str | tuple[str, ...]
    description: str = ""
    required: bool = False
    default: Any = None
    enum: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None
    items: str | None = None
    values: str | tuple[str, ...] | None = None

    @property
    def types(self) -> tuple[str, ...]:
        return self.type if isinstance(self.type, tuple) else (self.type,)


def _json_type(kind: str | tuple[str, ...]) -> str | list[str]:
    return list(kind) if isinstance(kind, tuple) else kind


def property_schema(param: Param) -> JsonObject:
    """The JSON Schema of one argument, as terse as its declaration."""
    # No type at all (an `Any` field) is JSON Schema's "any value", and the shortest way to say it.
    schema: JsonObject = {"type": _json_type(param.type)} if param.type else {}
    if not param.required and param.default is not None:
        schema["default"] = json_copy(param.default)
    if param.items:
        schema["items"] = {"type": param.items}
    if param.values:
        schema["additionalProperties"] = {"type": _json_type(param.values)}
    if param.enum:
        schema["enum"] = list(param.enum)
    if param.minimum is not None:
        schema["minimum"] = param.minimum
    if param.maximum is not None:
        schema["maximum"] = param.maximum
    if param.description:
        schema["description"] = param.description
    return schema


def input_schema(params: Sequence[Param], *, required: bool = True) -> dict[str, Any]:
    """The arguments as a JSON Schema object that refuses unknown names; `required=False` leaves presence
    checks to the caller (the aggregator names a missing argument per action, in its own words)."""
    schema: JsonObject = {
        "type": "object",
        "properties": {p.name: property_schema(p) for p in params},
        "additionalProperties": False,
    }
    names = [p.name for p in params if p.required]
    if required and names:
        schema["required"] = names
    return schema


def json_copy(value: Any) -> Any:
    """A fresh JSON-shaped copy (defaults live in frozen declarations as tuples)."""
    if isinstance(value, tuple | list):
        return [json_copy(v) for v in value]
    if isinstance(value, dict):
        return {k: json_copy(v) for k, v in value.items()}
    return value


# Dataclass declarations


_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _strip_none(hint: Any) -> tuple[Any, bool]:
    """`X | None` -> (X, True); anything else -> (hint, False)."""
    if get_origin(hint) in (Union, types.UnionType):
        members = [a for a in get_args(hint) if a is not type(None)]
        if len(members) < len(get_args(hint)):
            inner = members[0] if len(members) == 1 else Union[tuple(members)]  # noqa: UP007 - built at run time
            return inner, True
    return hint, False


def _kind(
    hint: Any, where: str
) -> tuple[str | tuple[str, ...], str | None, str | tuple[str, ...] | None, tuple[str, ...]]:
    """(type, items, values, enum) of a field type."""
    origin = get_origin(hint)
    if hint in _SCALARS:
        return _SCALARS[hint], None, None, ()
    if origin is Literal:
        return "string", None, None, tuple(str(a) for a in get_args(hint))
    if origin in (list, tuple, Sequence) or hint in (list, tuple):
        args = get_args(hint)
        return "array", _SCALARS.get(args[0]) if args else None, None, ()
    if origin in (dict, Mapping) or hint is dict:
        args = get_args(hint)
        values = None
        if len(args) == 2 and args[1] is not Any:
            value_hint, nullable = _strip_none(args[1])
            value_kind = _SCALARS.get(value_hint)
            if value_kind is None:
                raise TypeError(f"{where}: unsupported value type {args[1]!r}")
            values = (value_kind, "null") if nullable else value_kind
        return "object", None, values, ()
    if hint is Any:
        return (), None, None, ()
    if origin in (Union, types.UnionType):
        kinds: list[str] = []
        items = None
        for member in get_args(hint):
            kind, member_items, _, _ = _kind(member, where)
            kinds.extend(kind if isinstance(kind, tuple) else (kind,))
            items = items or member_items
        return tuple(kinds), items, None, ()
    raise TypeError(f"{where}: unsupported argument type {hint!r}")


def params_of(cls: type[Any]) -> tuple[Param, ...]:
    """The Params a dataclass declares, in field order. Defaults stay in the dataclass (applied when it is built)
    and out of the schema, which agents pay for in tokens."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not a dataclass")
    hints = get_type_hints(cls, include_extras=True)
    params = []
    for f in dataclasses.fields(cls):
        hint, extra = hints[f.name], Arg()
        if get_origin(hint) is Annotated:
            hint, *metadata = get_args(hint)
            extra = next((m for m in metadata if isinstance(m, Arg)), extra)
        hint, _ = _strip_none(hint)
        kind, items, values, enum = _kind(hint, f"{cls.__name__}.{f.name}")
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        params.append(
            Param(
                name=f.name,
                type=kind,
                description=extra.description,
                required=required,
                default=extra.shown_default,
                enum=enum,
                minimum=extra.minimum,
                maximum=extra.maximum,
                items=items,
                values=values,
            )
        )
    return tuple(params)


ParamsT = TypeVar("ParamsT")


def build(cls: type[ParamsT], arguments: Mapping[str, Any]) -> ParamsT:
    """An instance of the dataclass `cls` from arguments already checked against its schema; names other
    dataclasses declare (a consolidated tool's schema is the union of its actions') are left out."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    return cls(**{k: v for k, v in arguments.items() if k in names and v is not None})


__all__ = [
    "PARAM_TYPES",
    "Arg",
    "JsonObject",
    "Param",
    "build",
    "input_schema",
    "json_copy",
    "params_of",
    "property_schema",
]


# Parameters many actions share


@dataclass(frozen=True)
class NoParams:
    """An action that takes no arguments."""


@dataclass(frozen=True)
class Named:
    """An action on one thing, picked by its name."""

    name: str
