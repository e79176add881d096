"""The gateway's routing and guidance (spec 002), over a backend written against the interface."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from jarvis.common.errors import FailedPrecondition, Internal, InvalidArgument, NotFound
from jarvis.common.params import Param
from jarvis.debug.backends.base import ToolSpec
from jarvis.debug.domain.gateway import Gateway


class Recorder:
    """A backend as the project-server helper would write one: specs plus a call that records."""

    def __init__(self, category: str, specs: Sequence[ToolSpec], fail: Exception | None = None) -> None:
        self.category = category
        self.description = f"{category} tools"
        self._specs = tuple(specs)
        self.fail = fail
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def tools(self) -> Sequence[ToolSpec]:
        return self._specs

    def call(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        self.calls.append((tool, dict(arguments)))
        if self.fail is not None:
            raise self.fail
        return {"tool": tool, "arguments": dict(arguments)}


LOGS = ToolSpec(
    "logs_search",
    "Search logs",
    (
        Param("group", "string", "Log group", required=True),
        Param("limit", "integer", "Most events", default=20, minimum=1, maximum=100),
        Param("level", "string", "Level", enum=("info", "error")),
        Param("follow", "boolean", "Follow", default=False),
        Param("streams", "array", "Streams"),
    ),
)
STATS = ToolSpec("logs_stats", "Log statistics", ())


@pytest.fixture
def logs() -> Recorder:
    return Recorder("logs", [LOGS, STATS])


@pytest.fixture
def gateway(logs: Recorder) -> Gateway:
    return Gateway(
        [
            logs,
            Recorder(
                "tickets",
                [ToolSpec("tickets_get", "Get a ticket", (Param("key", "string", "Ticket key", required=True),))],
            ),
        ]
    )


def test_list_gives_every_category_with_its_description_and_tools(gateway: Gateway) -> None:
    for tool in ("list", "", "  list ", "list:"):
        listing = gateway.run(tool, "{}")
        assert listing["categories"] == [
            {"category": "logs", "description": "logs tools", "tools": ["logs_search", "logs_stats"]},
            {"category": "tickets", "description": "tickets tools", "tools": ["tickets_get"]},
        ]
        assert "list:<category>" in listing["usage"]


def test_list_category_gives_full_schemas_required_and_optional_with_defaults(gateway: Gateway) -> None:
    listing = gateway.run("list:logs", "")
    assert listing["category"] == "logs"
    search = listing["tools"][0]
    assert search["name"] == "logs_search"
    assert search["description"] == "Search logs"
    assert search["required"] == {"group": {"type": "string", "description": "Log group"}}
    assert search["optional"]["limit"] == {
        "type": "integer",
        "description": "Most events",
        "minimum": 1,
        "maximum": 100,
        "default": 20,
    }
    assert search["optional"]["level"]["enum"] == ["info", "error"]
    assert search["optional"]["follow"]["default"] is False
    assert search["example"] == 'debug(tool="logs_search", arguments=\'{"group": "<group>"}\')'
    assert listing["tools"][1] == {
        "name": "logs_stats",
        "description": "Log statistics",
        "required": {},
        "optional": {},
        "example": "debug(tool=\"logs_stats\", arguments='{}')",
    }


def test_unknown_category_suggests_the_close_one(gateway: Gateway) -> None:
    with pytest.raises(
        NotFound,
        match=r"unknown debug category 'log'; did you mean logs\?.*categories: logs, "
        r"tickets",
    ):
        gateway.run("list:log", "{}")


def test_execution_passes_checked_arguments_with_defaults(gateway: Gateway, logs: Recorder) -> None:
    result = gateway.run("logs_search", '{"group": "/aws/x", "limit": "5", "level": "ERROR", "streams": "a"}')
    assert result == {
        "tool": "logs_search",
        "arguments": {"group": "/aws/x", "limit": 5, "level": "error", "follow": False, "streams": ["a"]},
    }
    assert logs.calls == [("logs_search", result["arguments"])]


def test_missing_required_argument_shows_the_expected_schema(gateway: Gateway, logs: Recorder) -> None:
    with pytest.raises(InvalidArgument) as caught:
        gateway.run("logs_search", '{"limit": 5}')
    text = str(caught.value)
    assert text.startswith("logs_search: missing required argument 'group'.")
    assert "required:\n    group (string): Log group" in text
    assert "limit (integer, 1..100, default 20): Most events" in text
    assert "level (string, one of info|error): Level" in text
    assert 'Example: debug(tool="logs_search", arguments=\'{"group": "<group>"}\')' in text
    assert logs.calls == []


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"group": "g", "limit": 0}', "argument 'limit' must be at least 1, got 0"),
        ('{"group": "g", "limit": "many"}', "argument 'limit' must be an integer, got \"many\""),
        ('{"group": "g", "level": "debug"}', "argument 'level' must be one of info, error"),
        ('{"group": "g", "follow": "maybe"}', "argument 'follow' must be a boolean"),
        ('{"group": "g", "grup": 1}', "unknown argument 'grup' (did you mean 'group'?)"),
    ],
)
def test_wrong_arguments_say_what_is_wrong(gateway: Gateway, arguments: str, expected: str) -> None:
    with pytest.raises(InvalidArgument, match="Expected arguments of logs_search") as caught:
        gateway.run("logs_search", arguments)
    assert expected in str(caught.value)


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("{group: 1}", "Expecting property name enclosed in double quotes at line 1 column 2"),
        ("{'group': 'a'}", "JSON needs double quotes"),
        ('{"follow": True}', "JSON spells these true, false and null"),
        ('{"group": "a",}', "at line 1 column 15"),
    ],
)
def test_invalid_json_is_a_parse_error_with_guidance(gateway: Gateway, text: str, hint: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        gateway.run("logs_search", text)
    message = str(caught.value)
    assert message.startswith("arguments is not valid JSON: ")
    assert hint in message
    assert 'e.g. debug(tool="logs_search", arguments=\'{"group": "<group>"}\')' in message


def test_arguments_must_be_an_object(gateway: Gateway) -> None:
    with pytest.raises(InvalidArgument, match=r"must be a JSON object .*not a JSON list"):
        gateway.run("logs_search", '["group"]')


def test_unknown_tool_lists_similar_names_and_how_to_list(gateway: Gateway) -> None:
    with pytest.raises(NotFound) as caught:
        gateway.run("logs_serch", "{}")
    assert "unknown debug tool 'logs_serch'; similar tools: logs_search" in str(caught.value)
    assert 'debug(tool="list")' in str(caught.value)


def test_unknown_tool_without_similar_names_lists_all(gateway: Gateway) -> None:
    with pytest.raises(NotFound, match="available tools: logs_search, logs_stats, tickets_get"):
        gateway.run("zzz", "{}")


def test_category_name_as_tool_points_to_its_listing(gateway: Gateway) -> None:
    with pytest.raises(NotFound, match=r"'tickets' is a category, not a tool; call debug\(tool=\"list:tickets\"\)"):
        gateway.run("tickets", "{}")


def test_backend_errors_pass_through_with_the_tool_and_the_same_kind() -> None:
    failing = Recorder(
        "tickets",
        [ToolSpec("tickets_get", "Get", ())],
        fail=FailedPrecondition("Tickets is not configured: set TICKETS_TOKEN"),
    )
    with pytest.raises(
        FailedPrecondition,
        match=r"^debug tool tickets_get: Tickets is not configured: set "
        r"TICKETS_TOKEN$",
    ):
        Gateway([failing]).run("tickets_get", "{}")


def test_unexpected_backend_exceptions_become_internal_errors_naming_the_tool() -> None:
    failing = Recorder("tickets", [ToolSpec("tickets_get", "Get", ())], fail=KeyError("fields"))
    with pytest.raises(Internal, match=r"debug tool tickets_get failed unexpectedly \(KeyError: 'fields'\)"):
        Gateway([failing]).run("tickets_get", "{}")


def test_duplicate_tools_or_categories_fail_at_start() -> None:
    with pytest.raises(ValueError, match="defined by two backends"):
        Gateway([Recorder("a", [STATS]), Recorder("b", [STATS])])
    with pytest.raises(ValueError, match="share a category"):
        Gateway([Recorder("a", []), Recorder("a", [])])
    with pytest.raises(ValueError, match="unknown types"):
        Gateway([Recorder("a", [ToolSpec("a_x", "x", (Param("p", "str", "p"),))])])
