"""Profiles' tool calls on the direct path (`direct_calls.py`): forwarded without the SDK's per-request server
machinery.

A proxied call is most of what agents send through Jarvis, and around one the SDK's inbound machinery took
about twice the samples the proxy's own handler did (py-spy on a worker, a prefixed profile, 2026-07-28, 16
clients: 23 % against 11 %). The route decides which requests may come here: only those answered with a
JSON body (answer_mode.py), so never a call that relays progress, one on a surface that stands for one
server (a share, an unprefixed profile: it streams, as the server would), or one on a surface with an
interactive server (its requests to the caller ride the call's stream). Here a call runs through
`ProxySurface.call_tool`, as the SDK's handler runs it, for the tools the surface lists; any other name goes
to the SDK, which learns the servers' tools and words the refusal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types
from starlette.types import Scope

from jarvis.aggregator.direct_calls import DirectCall
from jarvis.aggregator.downstream.proxy.surface import ProxiedCall, ProxySurface
from jarvis.aggregator.tooling.request import principal_in


def _target(scope: Scope) -> str:
    return str(scope.get("path_params", {}).get("name", ""))


class ProxiedCalls:
    """The direct path's callee for the profile surface: the target is the path's name."""

    def __init__(self, surface: ProxySurface) -> None:
        self.surface = surface

    def serves(self, scope: Scope, name: str) -> bool:
        return name in self.surface.tools(_target(scope))

    def input_schema(self, scope: Scope, name: str) -> Mapping[str, Any] | None:
        exposed = self.surface.tools(_target(scope)).get(name)
        schema = exposed.definition.get("inputSchema") if exposed is not None else None
        return schema if isinstance(schema, Mapping) else None

    async def call(self, scope: Scope, call: DirectCall) -> dict[str, Any] | types.CallToolResult:
        return await self.surface.call_tool(
            ProxiedCall(
                target=_target(scope),
                principal=principal_in(scope),
                name=call.name,
                arguments=call.arguments,
                params=call.params,
                protocol_version=call.version,
            )
        )
