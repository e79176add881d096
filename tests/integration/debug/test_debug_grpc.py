"""The debug service over real gRPC (port 0): listings, Invoke, and domain errors as status codes."""

from __future__ import annotations

import json
from collections.abc import Iterator

import grpc
import pytest
from prometheus_client import CollectorRegistry

from jarvis.aggregator.gateways.debug import DebugGateway
from jarvis.api.debug.v1 import debug_pb2 as pb
from jarvis.api.debug.v1 import debug_pb2_grpc as pb_grpc
from jarvis.common.errors import FailedPrecondition, InvalidArgument, NotFound
from jarvis.common.grpc_server import create_server
from jarvis.debug.server import DEBUG_SERVICE, build
from jarvis.debug.settings import DebugSettings
from tests.support.aws_fake import LOG_GROUP


@pytest.fixture
def target(settings: DebugSettings) -> Iterator[str]:
    running = create_server(build(settings, CollectorRegistry()).services, "127.0.0.1:0")
    try:
        yield f"127.0.0.1:{running.port}"
    finally:
        running.stop(1.0)


@pytest.fixture
def stub(target: str) -> Iterator[pb_grpc.DebugServiceStub]:
    with grpc.insecure_channel(target) as channel:
        yield pb_grpc.DebugServiceStub(channel)


def test_categories_and_tools(stub: pb_grpc.DebugServiceStub) -> None:
    categories = stub.ListCategories(pb.ListCategoriesRequest()).categories
    assert [c.name for c in categories] == ["cloudwatch", "stepfunctions", "langsmith", "jira", "project"]
    assert "jira_search" in categories[3].tools
    everything = stub.ListTools(pb.ListToolsRequest()).tools
    assert len(everything) == 22  # debug-mcp's 17 and the project server's 5
    (search,) = [t for t in stub.ListTools(pb.ListToolsRequest(category="jira")).tools if t.name == "jira_search"]
    assert search.category == "jira"
    jql = next(p for p in search.params if p.name == "jql")
    assert jql.required
    assert jql.type == "string"
    assert jql.default_json == ""
    limit = next(p for p in search.params if p.name == "limit")
    assert (limit.default_json, limit.minimum, limit.maximum) == ("20", 1, 100)
    assert json.loads(search.input_schema_json)["required"] == ["jql"]


def test_invoke_runs_the_gateway(stub: pb_grpc.DebugServiceStub) -> None:
    listing = json.loads(stub.Invoke(pb.InvokeRequest(tool="list")).result_json)
    assert [c["category"] for c in listing["categories"]] == [
        "cloudwatch",
        "stepfunctions",
        "langsmith",
        "jira",
        "project",
    ]
    groups = json.loads(
        stub.Invoke(
            pb.InvokeRequest(tool="cloudwatch_list_log_groups", arguments_json='{"prefix": "/aws/lambda/orders"}')
        ).result_json
    )
    assert [g["name"] for g in groups["log_groups"]] == [LOG_GROUP]


@pytest.mark.parametrize(
    ("tool", "arguments", "code"),
    [
        ("list:nope", "", grpc.StatusCode.NOT_FOUND),
        ("cloudwatch_filter_logs", "{", grpc.StatusCode.INVALID_ARGUMENT),
        ("cloudwatch_filter_logs", "{}", grpc.StatusCode.INVALID_ARGUMENT),
        ("jira_get_issue", '{"key": "PAY-999"}', grpc.StatusCode.NOT_FOUND),
    ],
)
def test_domain_errors_map_to_status_codes(
    stub: pb_grpc.DebugServiceStub, tool: str, arguments: str, code: grpc.StatusCode
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        stub.Invoke(pb.InvokeRequest(tool=tool, arguments_json=arguments))
    assert caught.value.code() == code


@pytest.mark.anyio
async def test_aggregator_client_gets_domain_errors_back(target: str) -> None:
    client = DebugGateway(target)
    try:
        with pytest.raises(NotFound, match="unknown debug tool 'jira_serch'; similar tools: jira_search"):
            await client.invoke("jira_serch", "")
        with pytest.raises(InvalidArgument, match="arguments is not valid JSON"):
            await client.invoke("jira_search", "{jql}")
        categories = await client.invoke("list", "{}")
        assert len(categories["categories"]) == 5
    finally:
        await client.close()


@pytest.mark.anyio
async def test_unconfigured_backend_is_a_failed_precondition(settings: DebugSettings) -> None:
    assert settings.credentials_file is not None
    settings.credentials_file.write_text("")  # read on the next call: no restart
    running = create_server(build(settings, CollectorRegistry()).services, "127.0.0.1:0")
    client = DebugGateway(f"127.0.0.1:{running.port}")
    try:
        with pytest.raises(
            FailedPrecondition, match="Jira is not configured: set JIRA_URL, JIRA_EMAIL, JIRA_API_TOKEN"
        ):
            await client.invoke("jira_search", '{"jql": "x"}')
        assert (await client.check_health(DEBUG_SERVICE, 2.0))["ok"] is True
    finally:
        await client.close()
        running.stop(1.0)
