"""The aggregator's gateway to the debug service: one call, Invoke, whose answer is the backend's own JSON."""

from __future__ import annotations

import json
from typing import Any

from jarvis.aggregator.gateways.client import ServiceClient
from jarvis.api.debug.v1 import debug_pb2, debug_pb2_grpc
from jarvis.common.internal_plane import InternalPlane

DEBUG_SERVICE = "jarvis.api.debug.v1.DebugService"

# Invoke outlives the 120 s deadline that a retry policy in the channel's service config would impose
# on every method: project tools run test suites for up to 5 minutes. So the channel carries no
# service config (and Invoke is never replayed: a project tool can write), and each call sets its own
# deadline; the backends bound their remote calls well inside it.
INVOKE_TIMEOUT = 400.0


class DebugGateway(ServiceClient):
    """Calls the debug service; its errors come back as the domain errors they stand for."""

    service = "debug"

    def __init__(self, target: str, plane: InternalPlane | None = None) -> None:
        super().__init__(target, {}, plane)
        self._debug = debug_pb2_grpc.DebugServiceStub(self._channel)

    async def invoke(self, tool: str, arguments_json: str, timeout: float = INVOKE_TIMEOUT) -> Any:
        """Run a debug tool (or a `list`/`list:<category>` discovery call); its result as the service built it."""
        request = debug_pb2.InvokeRequest(tool=tool, arguments_json=arguments_json)
        response = await self._call(self._debug.Invoke, request, timeout=timeout)
        return json.loads(response.result_json)
