"""Spec 002 through a real `jarvis up`: the one `debug` tool on /mcp/debug, discovery, execution, errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.aws_fake import LOG_GROUP, MACHINE, FakeAws
from tests.support.saas_fakes import CHILD_TOOL, PROJECT_ID, ROOT_RUN
from tests.support.stack import RunningJarvis, error_text, mcp_client, result_json

pytestmark = pytest.mark.anyio

CATEGORIES = ["cloudwatch", "stepfunctions", "langsmith", "jira"]


async def debug(jarvis: RunningJarvis, **arguments: Any) -> Any:
    async with mcp_client(jarvis.url("/mcp/debug")) as client:
        return await client.call_tool("debug", arguments)


async def test_exactly_one_tool_about_500_tokens(configured: RunningJarvis) -> None:
    for mode in ("legacy", "auto"):
        async with mcp_client(configured.url("/mcp/debug"), mode=mode) as client:
            listed = await client.list_tools()
        assert [t.name for t in listed.tools] == ["debug"]
        schema = listed.tools[0].input_schema
        assert schema["properties"]["tool"]["default"] == "list"
        assert schema["properties"]["arguments"]["default"] == "{}"
        assert "required" not in schema  # both parameters are optional
        compact = json.dumps(listed.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":"))
        assert len(compact.encode()) / 4 <= 500, len(compact.encode())


@pytest.mark.parametrize("arguments", [{}, {"tool": "list"}, {"tool": "list", "arguments": "{}"}])
async def test_list_returns_every_category_with_a_brief_description(
    configured: RunningJarvis, arguments: dict[str, str]
) -> None:
    listing = result_json(await debug(configured, **arguments))
    categories = {c["category"]: c for c in listing["categories"]}
    assert list(categories)[:4] == CATEGORIES
    for category in categories.values():
        assert 10 < len(category["description"]) <= 100
        assert category["tools"]
    assert "list:<category>" in listing["usage"]


@pytest.mark.parametrize("category", CATEGORIES)
async def test_list_category_gives_full_argument_schemas(configured: RunningJarvis, category: str) -> None:
    listing = result_json(await debug(configured, tool=f"list:{category}"))
    assert listing["category"] == category
    assert len(listing["tools"]) >= 3
    for tool in listing["tools"]:
        assert tool["name"].startswith(category + "_")
        assert tool["description"]
        assert isinstance(tool["required"], dict)
        assert isinstance(tool["optional"], dict)
        for param in [*tool["required"].values(), *tool["optional"].values()]:
            assert param["type"] in ("string", "integer", "boolean", "array", "number", "object")
            assert param["description"]
        assert tool["example"].startswith(f'debug(tool="{tool["name"]}"')
    defaults = {name: p.get("default") for t in listing["tools"] for name, p in t["optional"].items()}
    assert defaults.get("limit") is not None  # optional arguments carry their defaults


def every_tool(aws: FakeAws) -> list[tuple[str, dict[str, Any], str]]:
    """One real call per tool, and a fragment of what it must return (all functionality is reachable)."""
    execution = aws.executions["order-42"]
    return [
        ("cloudwatch_list_log_groups", {"prefix": "/aws/lambda/"}, LOG_GROUP),
        ("cloudwatch_list_log_streams", {"log_group": LOG_GROUP}, "[$LATEST]"),
        ("cloudwatch_filter_logs", {"log_group": LOG_GROUP, "filter_pattern": "ERROR"}, "card_expired"),
        ("cloudwatch_insights_query", {"log_groups": [LOG_GROUP], "query": "fields @message"}, "Complete"),
        ("stepfunctions_list_state_machines", {}, MACHINE),
        ("stepfunctions_list_executions", {"state_machine": MACHINE, "status": "ABORTED"}, "order-42"),
        ("stepfunctions_describe_execution", {"execution_arn": execution}, "ABORTED"),
        ("stepfunctions_get_execution_history", {"execution_arn": execution}, "ExecutionStarted"),
        ("langsmith_list_projects", {}, PROJECT_ID),
        ("langsmith_list_runs", {"project": "checkout-prod", "errors_only": True}, "payments API timed out"),
        ("langsmith_get_run", {"run_id": ROOT_RUN}, "where is order 42?"),
        ("langsmith_trace_tree", {"run_id": CHILD_TOOL}, "charge_card"),
        ("langsmith_list_feedback", {"run_id": ROOT_RUN}, "correctness"),
        ("jira_search", {"jql": "project = PAY"}, "PAY-43"),
        ("jira_get_issue", {"key": "PAY-42"}, "Seen in CloudWatch"),
        ("jira_get_comments", {"key": "PAY-42"}, "Reproduced on staging."),
    ]


async def test_every_tool_executes_through_the_gateway(configured: RunningJarvis, aws: FakeAws) -> None:
    async with mcp_client(configured.url("/mcp/debug")) as client:
        listing = result_json(await client.call_tool("debug", {}))
        listed = {t for c in listing["categories"] if c["category"] in CATEGORIES for t in c["tools"]}
        calls = every_tool(aws)
        assert listed - {name for name, _, _ in calls} == {"cloudwatch_insights_results"}
        for name, arguments, expected in calls:
            result = await client.call_tool("debug", {"tool": name, "arguments": json.dumps(arguments)})
            assert expected in json.dumps(result_json(result)), name
        query = {"log_groups": [LOG_GROUP], "query": "fields @message", "wait_seconds": 0}
        started = result_json(
            await client.call_tool("debug", {"tool": "cloudwatch_insights_query", "arguments": json.dumps(query)})
        )
        again = json.dumps({"query_id": started["query_id"]})
        fetched = result_json(
            await client.call_tool("debug", {"tool": "cloudwatch_insights_results", "arguments": again})
        )
        assert fetched["query_id"] == started["query_id"]


async def test_arguments_may_also_be_an_object(configured: RunningJarvis) -> None:
    result = result_json(await debug(configured, tool="jira_get_issue", arguments={"key": "PAY-42"}))
    assert result["key"] == "PAY-42"


async def test_missing_required_arguments_return_the_expected_schema(configured: RunningJarvis) -> None:
    text = error_text(await debug(configured, tool="cloudwatch_filter_logs", arguments='{"filter_pattern": "ERROR"}'))
    assert text.startswith("cloudwatch_filter_logs: missing required argument 'log_group'.")
    assert "required:\n    log_group (string): Log group name" in text
    assert "limit (integer, 1..1000, default 100)" in text
    assert 'Example: debug(tool="cloudwatch_filter_logs", arguments=\'{"log_group": "<log_group>"}\')' in text


async def test_invalid_tool_lists_similar_tools(configured: RunningJarvis) -> None:
    text = error_text(await debug(configured, tool="jira_serch", arguments='{"jql": "project = PAY"}'))
    assert text.startswith("unknown debug tool 'jira_serch'; similar tools: jira_search")
    assert 'debug(tool="list")' in text
    text = error_text(await debug(configured, tool="describe_log_groups"))  # the old debug-mcp name
    assert "cloudwatch_list_log_groups" in text


async def test_invalid_json_returns_a_parse_error_with_guidance(configured: RunningJarvis) -> None:
    text = error_text(await debug(configured, tool="jira_search", arguments="{'jql': 'project = PAY'}"))
    assert text.startswith("arguments is not valid JSON: Expecting property name enclosed in double quotes")
    assert "JSON needs double quotes" in text
    assert 'e.g. debug(tool="jira_search", arguments=\'{"jql": "<jql>"}\')' in text


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        (
            "cloudwatch_filter_logs",
            {"log_group": "/aws/lambda/gone"},
            "debug tool cloudwatch_filter_logs: CloudWatch Logs FilterLogEvents failed: ResourceNotFoundException: "
            "The specified log group does not exist.",
        ),
        (
            "jira_search",
            {"jql": "sprint = 5"},
            "debug tool jira_search: Jira GET /rest/api/3/search/jql answered 400: Field 'sprint' does not exist or "
            "you do not have permission to view it.",
        ),
        (
            "langsmith_get_run",
            {"run_id": "missing"},
            "debug tool langsmith_get_run: LangSmith GET /runs/missing answered 404: Run not found",
        ),
    ],
)
async def test_tool_errors_pass_through_with_context(
    configured: RunningJarvis, tool: str, arguments: dict[str, str], expected: str
) -> None:
    assert error_text(await debug(configured, tool=tool, arguments=json.dumps(arguments))) == expected
