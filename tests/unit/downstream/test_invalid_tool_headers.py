"""SEP-2243: a downstream tool whose `x-mcp-header` declarations are invalid is never served (so never listed and
never called through a profile, a share, discovery or code mode), and one warning per tool and load names the rule
it breaks. The invalid forms are those of the conformance suite's scenario `http-invalid-tool-headers`."""

from __future__ import annotations

import logging
from typing import Any, cast

import pytest

from jarvis.aggregator.downstream.hosting.tools import check_pins, refused_message, served
from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.views.registry import ToolPinView

pytestmark = pytest.mark.anyio


def _tool(name: str, **properties: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object", "properties": properties}}


def _header(header: Any, kind: str = "string") -> dict[str, Any]:
    return {"type": kind, "x-mcp-header": header}


# Each invalid form, with a word of the rule the warning must name.
INVALID: dict[str, tuple[dict[str, Any], str]] = {
    "empty": (_tool("empty", value=_header("")), "RFC 9110 token"),
    "object": (_tool("object", data=_header("Data", "object")), "integer/string/boolean"),
    "array": (
        _tool("array", items={**_header("Items", "array"), "items": {"type": "string"}}),
        "integer/string/boolean",
    ),
    "null": (_tool("null", nil=_header("Nil", "null")), "integer/string/boolean"),
    "number": (_tool("number", score=_header("Score", "number")), "integer/string/boolean"),
    "duplicate": (_tool("duplicate", a=_header("Region"), b=_header("Region")), "duplicates"),
    "duplicate_in_case": (_tool("duplicate_in_case", a=_header("MyField"), b=_header("myfield")), "duplicates"),
    "space": (_tool("space", value=_header("My Region")), "RFC 9110 token"),
    "colon": (_tool("colon", value=_header("Region:Primary")), "RFC 9110 token"),
    "non_ascii": (_tool("non_ascii", value=_header("Région")), "RFC 9110 token"),
    "control": (_tool("control", value=_header("Region\t1")), "RFC 9110 token"),
    "not_a_string": (_tool("not_a_string", value=_header(7)), "must be a string"),
}
VALID = _tool("valid", region=_header("Region"), priority=_header("Priority", "integer"), on=_header("On", "boolean"))


@pytest.mark.parametrize("form", sorted(INVALID))
def test_a_tool_with_an_invalid_header_declaration_is_not_served(form: str) -> None:
    tool, rule = INVALID[form]
    result = served([tool, VALID], {})
    assert list(result.tools) == ["valid"]
    assert list(result.refused) == [form]
    assert rule in result.refused[form]


def test_valid_header_declarations_and_tools_without_any_are_served_as_declared() -> None:
    plain = _tool("plain", text={"type": "string"})
    result = served([VALID, plain], {})
    assert sorted(result.tools) == ["plain", "valid"]
    assert result.tools["valid"]["inputSchema"]["properties"]["region"]["x-mcp-header"] == "Region"
    assert not result.refused


def test_a_refused_tool_is_not_quarantined_even_when_its_pin_is() -> None:
    """Approving it would not make it callable: it is left out before its pin counts."""

    class Pin:
        state = "quarantined"

    tool, _ = INVALID["colon"]
    result = served([tool], {"colon": cast(ToolPinView, Pin())})
    assert not result.quarantined
    assert list(result.refused) == ["colon"]


class _Registry:
    async def record_tool_pins(self, server: str, definitions: dict[str, str]) -> list[ToolPinView]:
        return []


async def test_one_warning_per_refused_tool_and_load_names_the_tool_and_the_rule(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tools = [VALID, *(tool for tool, _ in INVALID.values())]
    with caplog.at_level(logging.WARNING, logger="jarvis.aggregator.downstream.hosting.tools"):
        result = await check_pins(cast(RegistryGateway, _Registry()), "toy", tools)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert sorted(cast(Any, r).tool for r in warnings) == sorted(INVALID)
    for record in warnings:
        form = cast(Any, record).tool
        assert INVALID[form][1] in record.getMessage()
        assert "x-mcp-header" in record.getMessage()
    assert list(result.tools) == ["valid"]


def test_the_refusal_names_the_server_the_tool_and_the_rule() -> None:
    message = refused_message("toy", "colon", "x-mcp-header 'Region:Primary' is not an RFC 9110 token")
    assert "'colon'" in message
    assert "'toy'" in message
    assert "RFC 9110 token" in message
