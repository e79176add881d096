"""A fast yes/no check for the JSON Schemas that parameter declarations produce.

Validating arguments with `jsonschema` took a fifth of the aggregator's CPU for a cheap tool call: its
validators walk the schema generically on every call. The schemas of our tools use a handful of
keywords (`params.property_schema`), so they compile to plain Python predicates. The predicate only
answers "valid"; whenever it says no, the caller asks `jsonschema` for the error to report, so the
messages stay exactly what they were, and a schema using any other keyword gets no predicate at all
(`compile_check` returns None) rather than a guess.

Semantics follow JSON Schema 2020-12 as `jsonschema` implements it: booleans are not numbers, an
integer may be a float with no fractional part, `enum` tells `true` from `1`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

Check = Callable[[Any], bool]

# Keywords that only annotate: they never make an instance invalid.
_ANNOTATIONS = frozenset({"description", "default", "title", "examples"})
_KNOWN = _ANNOTATIONS | {"type", "enum", "minimum", "maximum", "items", "properties", "additionalProperties"}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


_TYPES: dict[str, Check] = {
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _same(a: Any, b: Any) -> bool:
    """JSON equality: `true` is not `1`, `1` is `1.0`, containers compare element by element."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    return type(a) is type(b) and a == b


def compile_check(schema: Any) -> Check | None:
    """A predicate equivalent to validating against `schema`, or None if it uses keywords not covered here."""
    if schema is True or schema == {}:
        return lambda _: True
    if schema is False:
        return lambda _: False
    if not isinstance(schema, Mapping) or not _KNOWN.issuperset(schema):
        return None
    checks: list[Check] = []
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not all(isinstance(n, str) and n in _TYPES for n in names):
            return None
        kinds = [_TYPES[n] for n in names]
        checks.append(kinds[0] if len(kinds) == 1 else lambda v: any(k(v) for k in kinds))
    if "enum" in schema:
        allowed: Sequence[Any] = schema["enum"]
        checks.append(lambda v: any(_same(v, a) for a in allowed))
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None or high is not None:
        if not all(bound is None or _is_number(bound) for bound in (low, high)):
            return None
        checks.append(lambda v: not _is_number(v) or ((low is None or v >= low) and (high is None or v <= high)))
    nested = _nested_checks(schema)
    if nested is None:
        return None
    checks += nested
    return lambda v: all(check(v) for check in checks)


def _nested_checks(schema: Mapping[str, Any]) -> list[Check] | None:
    """The checks of `items`, `properties` and `additionalProperties`, which look inside containers."""
    checks: list[Check] = []
    if "items" in schema:
        item = compile_check(schema["items"])
        if item is None:
            return None
        checks.append(lambda v: not isinstance(v, list) or all(item(x) for x in v))
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        return None
    named = {name: compile_check(s) for name, s in properties.items()}
    if any(check is None for check in named.values()):
        return None
    other = compile_check(schema.get("additionalProperties", True))
    if other is None:
        return None
    if named or "additionalProperties" in schema:

        def members(value: Any) -> bool:
            if not isinstance(value, dict):
                return True
            for key, member in value.items():
                check = named.get(key, other)
                if not check(member):  # type: ignore[misc]
                    return False
            return True

        checks.append(members)
    return checks
