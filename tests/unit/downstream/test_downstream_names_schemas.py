"""Namespaced tool names and schema normalisation: the rules that keep a catalog of others' tools valid."""

from __future__ import annotations

import re

import jsonschema
import pytest

from jarvis.aggregator.downstream.hosting.naming import MAX_TOOL_NAME, namespaced
from jarvis.aggregator.downstream.hosting.schema import normalise_input_schema, normalise_tool
from jarvis.aggregator.downstream.hosting.tools import pin_definition, served

VALID_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def test_short_names_are_kept() -> None:
    assert namespaced("time", "get_current_time") == "time__get_current_time"


@pytest.mark.parametrize(
    ("server", "tool"),
    [
        ("s" * 63, "tool"),
        ("server", "t" * 100),
        ("server", "tool with spaces/and:colons"),
        ("x", "ü" * 10),
    ],
)
def test_long_or_odd_names_are_cut_with_a_stable_hash(server: str, tool: str) -> None:
    name = namespaced(server, tool)
    assert len(name) <= MAX_TOOL_NAME
    assert VALID_NAME.match(name)
    assert name == namespaced(server, tool)  # deterministic across calls, processes and replicas


def test_different_originals_never_collide_after_cutting() -> None:
    names = {namespaced("s" * 63, f"tool_{i}") for i in range(200)}
    names |= {namespaced("a", "echo"), namespaced("b", "echo")}
    assert len(names) == 202


@pytest.mark.parametrize(
    ("raw", "fixed"),
    [
        ({"properties": {"x": {"type": "string"}}}, {"type": "object", "properties": {"x": {"type": "string"}}}),
        ({"type": "string"}, {"type": "object"}),
        ({"type": "object", "properties": 5}, {"type": "object"}),
        ({"type": "object", "required": "x"}, {"type": "object"}),
        ({"type": "object", "properties": {"x": {"type": "nonsense"}}}, {"type": "object"}),
        (None, {"type": "object"}),
        ("a string", {"type": "object"}),
    ],
)
def test_bad_input_schemas_become_valid_object_schemas(raw: object, fixed: dict[str, object]) -> None:
    schema, problems = normalise_input_schema(raw)
    assert schema == fixed
    assert problems
    jsonschema.Draft202012Validator.check_schema(schema)


def test_good_schemas_are_untouched() -> None:
    raw = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
        "$schema": "https://json-schema.org/draft/2020-12/schema",
    }
    assert normalise_input_schema(raw) == (raw, [])


def test_tools_keep_their_fields_and_lose_only_what_is_broken() -> None:
    tool, problems = normalise_tool(
        {
            "name": "t",
            "description": 5,
            "inputSchema": {"type": "object"},
            "outputSchema": {"type": "array"},
            "annotations": "x",
            "title": "T",
            "_meta": {"k": 1},
        }
    )
    assert tool == {"name": "t", "description": "5", "inputSchema": {"type": "object"}, "title": "T", "_meta": {"k": 1}}
    assert len(problems) == 3


def test_pins_cover_what_the_model_reads_not_transport_details() -> None:
    base = {"name": "t", "description": "d", "inputSchema": {"type": "object"}}
    assert pin_definition(base) == pin_definition({**base, "_meta": {"changes": "every time"}})
    assert pin_definition(base) != pin_definition({**base, "annotations": {"destructiveHint": True}})
    assert pin_definition(base) != pin_definition({**base, "description": "d, and also exfiltrate"})


def test_quarantined_tools_are_withheld() -> None:
    class Pin:
        state = "quarantined"

    result = served([{"name": "a", "inputSchema": {}}, {"name": "b", "inputSchema": {"type": "object"}}], {"a": Pin()})  # type: ignore[dict-item]
    assert list(result.tools) == ["b"]
    assert list(result.quarantined) == ["a"]


def test_share_and_profile_scopes_can_name_any_server_or_profile() -> None:
    from jarvis.common.errors import InvalidArgument
    from jarvis.common.scopes import allows, validate_scope

    assert validate_scope("share:1password") == "share:1password"
    assert validate_scope("profile:web.v2:web.v2__fetch") == "profile:web.v2:web.v2__fetch"
    assert allows(["share:1password"], "share", "1password", "any_tool", read_only=False)
    assert not allows(["share:1password"], "share", "other", "any_tool", read_only=False)
    with pytest.raises(InvalidArgument):
        validate_scope("9lives")  # a surface still starts with a letter
