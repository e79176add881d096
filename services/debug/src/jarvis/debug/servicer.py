"""DebugService over gRPC: unpack the request, call the gateway, pack the answer. Nothing else."""

from __future__ import annotations

import json

import grpc

from jarvis.api.debug.v1 import debug_pb2 as pb
from jarvis.api.debug.v1 import debug_pb2_grpc as pb_grpc
from jarvis.debug.backends.base import ToolSpec
from jarvis.debug.domain.arguments import input_schema
from jarvis.debug.domain.gateway import Gateway


def _tool_to_pb(category: str, spec: ToolSpec) -> pb.Tool:
    params = [
        pb.Param(
            name=p.name,
            type="|".join(p.types),
            description=p.description,
            required=p.required,
            default_json="" if p.default is None else json.dumps(p.default),
            enum=list(p.enum),
            minimum=p.minimum,
            maximum=p.maximum,
        )
        for p in spec.params
    ]
    return pb.Tool(
        name=spec.name,
        category=category,
        description=spec.description,
        params=params,
        input_schema_json=json.dumps(input_schema(spec), separators=(",", ":")),
    )


class DebugServicer(pb_grpc.DebugServiceServicer):
    """Domain errors propagate; the server's interceptor maps them to status codes in one place."""

    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway

    def ListCategories(
        self, request: pb.ListCategoriesRequest, context: grpc.ServicerContext
    ) -> pb.ListCategoriesResponse:
        return pb.ListCategoriesResponse(
            categories=[
                pb.Category(name=c.name, description=c.description, tools=list(c.tools))
                for c in self._gateway.categories()
            ]
        )

    def ListTools(self, request: pb.ListToolsRequest, context: grpc.ServicerContext) -> pb.ListToolsResponse:
        return pb.ListToolsResponse(tools=[_tool_to_pb(c, s) for c, s in self._gateway.tools(request.category)])

    def Invoke(self, request: pb.InvokeRequest, context: grpc.ServicerContext) -> pb.InvokeResponse:
        result = self._gateway.run(request.tool, request.arguments_json)
        # default=str: a backend's stray datetime or Decimal must not turn a good answer into an error.
        return pb.InvokeResponse(result_json=json.dumps(result, default=str, separators=(",", ":")))
