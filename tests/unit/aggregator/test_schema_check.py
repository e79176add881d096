"""The fast argument check agrees with jsonschema on every tool's schema, for valid and invalid arguments alike.

`compile_check` answers "valid" on the request path and leaves the wording of refusals to jsonschema, so the
two must agree wherever the fast one says yes; here they must agree everywhere, over arguments built to hit
each keyword's edges: wrong types, booleans for numbers, floats that are and are not integers, values just
inside and outside bounds and enums, wrong item and value types, unknown names.
"""

from __future__ import annotations

import itertools
from typing import Any

import jsonschema
import pytest

from jarvis.common.schema_check import compile_check
from tests.support.offline_surfaces import offline_surfaces

PROBES: list[Any] = ["", "x", 0, 1, -1, 2.0, 1.5, True, False, None, [], ["a"], [1], [True], {}, {"k": "v"}, {"k": 1}]


def _tool_schemas() -> dict[str, dict[str, Any]]:
    return {f"{s.name}/{t.name}": t.input_schema for s in offline_surfaces() for t in s.tools}


SCHEMAS = _tool_schemas()


def _values_for(schema: dict[str, Any]) -> list[Any]:
    """Probe values plus the edges of this property's own enum and bounds."""
    values = list(PROBES)
    values += schema.get("enum", [])
    values += [e + "!" for e in schema.get("enum", []) if isinstance(e, str)]
    for bound in (schema.get("minimum"), schema.get("maximum")):
        if bound is not None:
            values += [bound - 1, bound, bound + 1, float(bound), bound + 0.5]
    return values


def _argument_sets(schema: dict[str, Any]) -> list[Any]:
    properties: dict[str, Any] = schema["properties"]
    sets: list[Any] = [{}, [], "x", None, {"no_such_parameter": 1}]
    for name, prop in properties.items():
        sets += [{name: value} for value in _values_for(prop)]
    for (a, pa), (b, pb) in itertools.islice(itertools.combinations(properties.items(), 2), 40):
        sets += [{a: va, b: vb} for va in _values_for(pa)[:6] for vb in _values_for(pb)[:6]]
    return sets


def test_every_tool_schema_compiles() -> None:
    assert len(SCHEMAS) > 20
    assert [name for name, schema in SCHEMAS.items() if compile_check(schema) is None] == []


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_fast_check_agrees_with_jsonschema(name: str) -> None:
    schema = SCHEMAS[name]
    fast = compile_check(schema)
    assert fast is not None
    validator = jsonschema.Draft202012Validator(schema)
    disagreements = [args for args in _argument_sets(schema) if fast(args) != validator.is_valid(args)]
    assert disagreements == []


def test_keywords_outside_the_subset_get_no_fast_check() -> None:
    assert compile_check({"type": "string", "pattern": "^a"}) is None
    assert compile_check({"type": "object", "properties": {"a": {"$ref": "#/x"}}}) is None
    assert compile_check({"type": "integer", "minimum": "1"}) is None
    assert compile_check({"type": "widget"}) is None


def test_enum_tells_booleans_from_numbers() -> None:
    check = compile_check({"enum": [1, "a", [1, 2]]})
    assert check is not None
    assert [check(v) for v in (1, 1.0, True, "a", [1, 2], [1, True], "b")] == [
        True,
        True,
        False,
        True,
        True,
        False,
        False,
    ]
