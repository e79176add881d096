"""The `debug` surface (spec 002): exactly one gateway tool, `debug`, in front of the debug service.

Discovery ("list", "list:<category>"), argument parsing and every error's guidance live in the
debug service, so this surface is one call and its tools/list stays near 500 tokens.
"""

from __future__ import annotations

import json
from typing import Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.gateways.debug import INVOKE_TIMEOUT
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Surface, Tool
from jarvis.api.debug.v1 import debug_pb2 as pb
from jarvis.common.errors import FailedPrecondition

CATEGORIES = "cloudwatch, stepfunctions, langsmith, jira, project"


def build_debug_surface(ctx: ToolContext) -> Surface:
    async def debug(args: dict[str, Any], _: Principal) -> Any:
        client = ctx.debug
        if client is None:
            raise FailedPrecondition(
                "the debug service is not part of this deployment; start it with "
                "`jarvis serve debug` and set JARVIS_AGGREGATOR_DEBUG_TARGET"
            )
        arguments = args.get("arguments", "{}")
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        request = pb.InvokeRequest(tool=args.get("tool", "list"), arguments_json=text)
        response = await client.call(client.debug.Invoke, request, timeout=INVOKE_TIMEOUT)
        return json.loads(response.result_json)

    tool = Tool(
        name="debug",
        description="Debugging tools gateway: discover with list, then run",
        properties={
            "tool": {
                "type": "string",
                "default": "list",
                "description": f'"list", "list:<category>" ({CATEGORIES}) or a tool name to run',
            },
            # An object is accepted too: agents often send one where the spec asks for its JSON text.
            "arguments": {
                "type": ["string", "object"],
                "default": "{}",
                "description": 'JSON object of the tool\'s arguments, e.g. {"log_group": "/aws/x"}',
            },
        },
        handler=debug,
        # Not read-only: project tools can write (db_bridge seed) and run tests.
        read_only=False,
    )
    return Surface(
        name="debug",
        path="/mcp/debug",
        tools=[tool],
        instructions='Debug AWS, LangSmith, Jira and projects: call debug(tool="list") first.',
    )
