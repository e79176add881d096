"""A tools/call is decided once: the gate's decision (action picked, arguments schema-checked, scopes checked)
travels with the request, and the tool runs it without deciding again, but only for the very call it was made for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from jarvis.aggregator.tooling.principal import LOCAL_ADMIN, principal_from_token
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.common.errors import InvalidArgument, PermissionDenied

pytestmark = pytest.mark.anyio


@dataclass(frozen=True)
class EchoParams:
    text: str


def _tool(seen: list[str]) -> Tool:
    async def echo(params: EchoParams, _: Any) -> str:
        seen.append(params.text)
        return params.text

    async def wipe(params: EchoParams, _: Any) -> str:
        return "wiped"

    return Tool(
        name="echo",
        description="Echo",
        actions=[Action("say", echo, EchoParams, read_only=True), Action("wipe", wipe, EchoParams, admin=True)],
    )


async def test_the_gates_decision_is_run_without_deciding_again(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    tool = _tool(seen)
    decided = tool.decide({"action": "say", "text": "hi"}, LOCAL_ADMIN, "jarvis")

    def no_second_check(*_: Any) -> Any:
        raise AssertionError("decided again")

    monkeypatch.setattr(tool, "resolve", no_second_check)
    assert await tool.call({"action": "say", "text": "hi"}, LOCAL_ADMIN, "jarvis", decided) == "hi"
    assert seen == ["hi"]


async def test_a_decision_for_another_call_is_not_taken() -> None:
    seen: list[str] = []
    tool = _tool(seen)
    reader = principal_from_token("t", "reader", ["read"])
    decided = tool.decide({"action": "say", "text": "hi"}, reader, "jarvis")
    # Other arguments: decided afresh (and checked: the reader may not wipe).
    with pytest.raises(PermissionDenied):
        await tool.call({"action": "wipe", "text": "x"}, reader, "jarvis", decided)
    # Another caller, another surface: decided afresh too.
    with pytest.raises(InvalidArgument):
        await tool.call({"action": "say"}, LOCAL_ADMIN, "jarvis", decided)
    assert not decided.covers("debug", "echo", reader, {"action": "say", "text": "hi"})
    assert not decided.covers("jarvis", "echo", LOCAL_ADMIN, {"action": "say", "text": "hi"})
    assert decided.covers("jarvis", "echo", reader, {"action": "say", "text": "hi"})
    assert seen == []
