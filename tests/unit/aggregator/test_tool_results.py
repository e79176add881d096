"""What agents read from every tool is pinned: each action's handler declares its result type, and the JSON Schema
of those types is committed in tool_results.json. A change to what a tool answers (a renamed protobuf field
included: views are built field by field, never from protobuf names) fails here until the file is regenerated on
purpose with `python -m tests.unit.aggregator.test_tool_results`."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any, get_type_hints

from jarvis.aggregator.app import build_surfaces
from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.gateways.debug import DebugGateway
from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.gateways.runtime import RuntimeGateway
from jarvis.aggregator.gateways.scheduler import SchedulerGateway
from jarvis.aggregator.tooling.results import result_schema
from jarvis.aggregator.tooling.tool import Handler
from jarvis.aggregator.usage import UsageRecorder

PINNED = Path(__file__).with_name("tool_results.json")
UNREACHABLE = "127.0.0.1:9"  # channels connect lazily; nothing here makes a call


class _NoSystem:
    mode = "test"

    async def bootstrap(self, restore: bool = False) -> dict[str, Any]:
        raise NotImplementedError

    async def request_restart(self) -> dict[str, Any]:
        raise NotImplementedError

    async def restart_infra(self) -> dict[str, Any]:
        raise NotImplementedError


def _return_type(handler: Handler[Any]) -> Any:
    return get_type_hints(handler).get("return")


def offline_context(registry: RegistryGateway) -> ToolContext:
    """A context whose backends are unreachable: enough to build every surface and read its tools."""
    return ToolContext(
        registry=registry,
        usage=UsageRecorder(registry),
        system=_NoSystem(),
        project_root=Path("."),
        started_at=time.time(),
        debug=DebugGateway(UNREACHABLE),
        runtime=RuntimeGateway(UNREACHABLE),
        scheduler=SchedulerGateway(UNREACHABLE),
        discovery_dense=False,
    )


async def _results() -> tuple[dict[str, dict[str, Any]], list[str]]:
    registry = RegistryGateway(UNREACHABLE)
    ctx = offline_context(registry)
    pinned: dict[str, dict[str, Any]] = {}
    untyped: list[str] = []
    for surface in build_surfaces(ctx):
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
    await registry.close()
    return pinned, untyped


# Handlers that still return untyped results (issue 17): this list only shrinks.
UNTYPED_ALLOWED = json.loads(PINNED.read_text())["untyped"] if PINNED.exists() else []


def test_every_tool_result_is_pinned() -> None:
    pinned, untyped = asyncio.run(_results())
    committed = json.loads(PINNED.read_text())
    assert pinned == committed["results"], (
        "a tool's result type changed; if intended, regenerate with python -m tests.unit.aggregator.test_tool_results"
    )
    assert sorted(untyped) == sorted(committed["untyped"]), "untyped handlers changed: regenerate the pin file"


def test_results_are_objects_or_say_who_defines_them() -> None:
    """A pinned result is a JSON object of Jarvis's, or says which program defines it (a debug backend's JSON,
    a downstream tool's MCP result) or what its text is: never an unexplained Any. A result of several kinds (JSON,
    or declarations with format="typescript") holds to that for each."""
    pinned, _ = asyncio.run(_results())
    for tool, actions in pinned.items():
        for action, schema in actions.items():
            for kind in schema.get("anyOf", [schema]):
                assert kind.get("type") == "object" or "description" in kind, (tool, action, kind)


if __name__ == "__main__":
    results, untyped_handlers = asyncio.run(_results())
    PINNED.write_text(json.dumps({"results": results, "untyped": sorted(untyped_handlers)}, indent=1) + "\n")
    sys.stdout.write(f"pinned {sum(map(len, results.values()))} results; {len(untyped_handlers)} untyped\n")
