"""What agents read from every tool is pinned: each action's handler declares its result type, and the JSON Schema
of those types is committed in tool_results.json. A change to what a tool answers (a renamed protobuf field
included: views are built field by field, never from protobuf names) fails here until the file is regenerated on
purpose with `python -m tests.unit.aggregator.test_tool_results`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, get_type_hints

from jarvis.aggregator.tooling.results import result_schema
from jarvis.aggregator.tooling.tool import Handler
from tests.support.offline_surfaces import offline_surfaces

PINNED = Path(__file__).with_name("tool_results.json")


def _return_type(handler: Handler[Any]) -> Any:
    return get_type_hints(handler).get("return")


def _results() -> tuple[dict[str, dict[str, Any]], list[str]]:
    pinned: dict[str, dict[str, Any]] = {}
    untyped: list[str] = []
    for surface in offline_surfaces():
        for tool in surface.tools:
            handlers: dict[str, Handler[Any] | None] = {a.name: a.handler for a in tool.actions} or {"": tool.handler}
            for action, handler in handlers.items():
                assert handler is not None
                label = f"{surface.name}/{tool.name}" + (f" action={action}" if action else "")
                returned = _return_type(handler)
                if returned is None or returned is Any:
                    untyped.append(label)
                else:
                    pinned.setdefault(f"{surface.name}/{tool.name}", {})[action or "call"] = result_schema(returned)
    return pinned, untyped


# Handlers that still return untyped results (issue 17): this list only shrinks.
UNTYPED_ALLOWED = json.loads(PINNED.read_text())["untyped"] if PINNED.exists() else []


def test_every_tool_result_is_pinned() -> None:
    pinned, untyped = _results()
    committed = json.loads(PINNED.read_text())
    assert pinned == committed["results"], (
        "a tool's result type changed; if intended, regenerate with python -m tests.unit.aggregator.test_tool_results"
    )
    assert sorted(untyped) == sorted(committed["untyped"]), "untyped handlers changed: regenerate the pin file"


def test_results_are_objects_or_say_who_defines_them() -> None:
    """A pinned result is a JSON object of Jarvis's, or says which program defines it (a debug backend's JSON,
    a downstream tool's MCP result) or what its text is: never an unexplained Any. A result of several kinds (JSON,
    or declarations with format="typescript") holds to that for each."""
    pinned, _ = _results()
    for tool, actions in pinned.items():
        for action, schema in actions.items():
            for kind in schema.get("anyOf", [schema]):
                assert kind.get("type") == "object" or "description" in kind, (tool, action, kind)


if __name__ == "__main__":
    results, untyped_handlers = _results()
    PINNED.write_text(json.dumps({"results": results, "untyped": sorted(untyped_handlers)}, indent=1) + "\n")
    sys.stdout.write(f"pinned {sum(map(len, results.values()))} results; {len(untyped_handlers)} untyped\n")
