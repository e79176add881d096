"""The `debug` surface (spec 002): exactly one gateway tool, `debug`, in front of the debug service.

Discovery ("list", "list:<category>"), argument parsing and every error's guidance live in the
debug service, so this surface is one call and its tools/list stays near 500 tokens.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.paths import DEBUG_PATH
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.results import ForeignJson
from jarvis.aggregator.tooling.tool import Surface, Tool
from jarvis.common.errors import FailedPrecondition
from jarvis.common.params import Arg

CATEGORIES = "cloudwatch, stepfunctions, langsmith, jira, project"


@dataclass(frozen=True)
class DebugCall:
    tool: Annotated[
        str, Arg(f'"list", "list:<category>" ({CATEGORIES}) or a tool name to run', shown_default="list")
    ] = "list"
    # An object is accepted too: agents often send one where the spec asks for its JSON text.
    arguments: Annotated[
        str | dict[str, Any],
        Arg('JSON object of the tool\'s arguments, e.g. {"log_group": "/aws/x"}', shown_default="{}"),
    ] = "{}"


def build_debug_surface(ctx: ToolContext) -> Surface:
    async def debug(p: DebugCall, _: Principal) -> ForeignJson:
        if ctx.debug is None:
            raise FailedPrecondition(
                "the debug service is not part of this deployment; start it with "
                "`jarvis serve debug` and set JARVIS_AGGREGATOR_DEBUG_TARGET"
            )
        text = p.arguments if isinstance(p.arguments, str) else json.dumps(p.arguments)
        return ForeignJson(await ctx.debug.invoke(p.tool, text))

    tool = Tool(
        name="debug",
        description="Debugging tools gateway: discover with list, then run",
        summary=(
            "Debugging backends behind one tool: AWS CloudWatch logs, Step Functions executions, LangSmith traces, "
            "Jira issues, a project's own introspection. List its tools, then run one."
        ),
        params=DebugCall,
        handler=debug,
        # Not read-only: project tools can write (db_bridge seed) and run tests.
        read_only=False,
    )
    return Surface(
        name="debug",
        path=DEBUG_PATH,
        tools=[tool],
        instructions='Debug AWS, LangSmith, Jira and projects: call debug(tool="list") first.',
    )
