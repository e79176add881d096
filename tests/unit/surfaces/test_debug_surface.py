"""The `debug` gateway tool over a fake debug service."""

from __future__ import annotations

import json

import pytest

from jarvis.aggregator.surfaces.debug import build_debug_surface
from jarvis.aggregator.tooling.principal import LOCAL_ADMIN
from jarvis.aggregator.tooling.results import ForeignJson
from jarvis.common.errors import FailedPrecondition
from tests.unit.surfaces.fakes import FakeDebug, FakeRegistry, context

pytestmark = pytest.mark.anyio


async def test_arguments_given_as_an_object_are_sent_as_json(registry: FakeRegistry) -> None:
    debug = FakeDebug()
    tool = build_debug_surface(context(registry, debug=debug)).get("debug")
    answer = await tool.call({"tool": "cloudwatch_logs", "arguments": {"log_group": "/aws/x"}}, LOCAL_ADMIN, "debug")
    assert answer == ForeignJson({"tool": "cloudwatch_logs", "ran": True})
    [asked] = debug.called("invoke")
    assert asked["tool"] == "cloudwatch_logs"
    assert json.loads(asked["arguments_json"]) == {"log_group": "/aws/x"}


async def test_with_no_arguments_it_lists_the_tools(registry: FakeRegistry) -> None:
    debug = FakeDebug()
    await build_debug_surface(context(registry, debug=debug)).get("debug").call({}, LOCAL_ADMIN, "debug")
    assert debug.called("invoke") == [{"tool": "list", "arguments_json": "{}"}]


async def test_without_a_debug_service_it_says_how_to_start_one(registry: FakeRegistry) -> None:
    tool = build_debug_surface(context(registry)).get("debug")
    with pytest.raises(FailedPrecondition, match="jarvis serve debug"):
        await tool.call({"tool": "list"}, LOCAL_ADMIN, "debug")
