"""CloudWatch Logs and Step Functions backends: real boto3 against moto's server over loopback HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jarvis.common.errors import FailedPrecondition, NotFound, Unavailable
from jarvis.debug.app import build_backends
from jarvis.debug.domain.gateway import Gateway
from jarvis.debug.settings import DebugSettings
from tests.conftest import DEAD_ENDPOINT
from tests.support.aws_fake import ACCESS_KEY, LOG_GROUP, MACHINE, REGION, SECRET_KEY, STREAM, FakeAws
from tests.support.debug_fixtures import write_credentials


def test_list_log_groups_with_prefix(gateway: Gateway) -> None:
    everything = gateway.run("cloudwatch_list_log_groups", "{}")
    assert {g["name"] for g in everything["log_groups"]} == {LOG_GROUP, "/aws/lambda/billing-worker"}
    only = gateway.run("cloudwatch_list_log_groups", '{"prefix": "/aws/lambda/orders"}')
    assert [g["name"] for g in only["log_groups"]] == [LOG_GROUP]
    assert only["log_groups"][0]["created"].endswith("Z")


def test_list_log_streams(gateway: Gateway) -> None:
    result = gateway.run("cloudwatch_list_log_streams", json.dumps({"log_group": LOG_GROUP}))
    assert [s["name"] for s in result["streams"]] == [STREAM]


def test_filter_logs_by_pattern_and_time(gateway: Gateway) -> None:
    # The fake is seeded once per session: a window of hours keeps its events in it however long the run takes.
    result = gateway.run(
        "cloudwatch_filter_logs", json.dumps({"log_group": LOG_GROUP, "filter_pattern": "ERROR", "start": "6h"})
    )
    assert result["count"] == 1
    assert result["events"][0]["message"] == "ERROR payment declined for order 42: card_expired"
    assert result["events"][0]["stream"] == STREAM
    everything = gateway.run("cloudwatch_filter_logs", json.dumps({"log_group": LOG_GROUP, "limit": 3}))
    assert everything["count"] == 3


def test_insights_query_waits_for_results_and_results_can_be_fetched_again(gateway: Gateway) -> None:
    query = "fields @timestamp, @message | filter @message like /ERROR/ | limit 10"
    result = gateway.run("cloudwatch_insights_query", json.dumps({"log_groups": [LOG_GROUP], "query": query}))
    assert result["status"] == "Complete"
    # moto's Insights engine ignores `filter`; the rows still come back in the real API's shape.
    assert "ERROR payment declined for order 42: card_expired" in [r["@message"] for r in result["rows"]]
    assert all("@ptr" not in r and "@timestamp" in r for r in result["rows"])
    again = gateway.run("cloudwatch_insights_results", json.dumps({"query_id": result["query_id"]}))
    assert again["rows"] == result["rows"]


def test_missing_log_group_error_passes_through_with_the_aws_call(gateway: Gateway) -> None:
    with pytest.raises(NotFound) as caught:
        gateway.run("cloudwatch_filter_logs", '{"log_group": "/aws/lambda/nope"}')
    assert str(caught.value) == (
        "debug tool cloudwatch_filter_logs: CloudWatch Logs FilterLogEvents failed: "
        "ResourceNotFoundException: The specified log group does not exist."
    )


def test_state_machines_and_executions_by_name(gateway: Gateway, aws: FakeAws) -> None:
    machines = gateway.run("stepfunctions_list_state_machines", "{}")["state_machines"]
    assert [(m["name"], m["arn"]) for m in machines] == [(MACHINE, aws.machine_arn)]
    executions = gateway.run("stepfunctions_list_executions", json.dumps({"state_machine": MACHINE}))
    assert executions["state_machine_arn"] == aws.machine_arn
    assert {e["name"] for e in executions["executions"]} == {"order-41", "order-42"}
    aborted = gateway.run(
        "stepfunctions_list_executions", json.dumps({"state_machine": aws.machine_arn, "status": "aborted"})
    )
    assert [e["name"] for e in aborted["executions"]] == ["order-42"]


def test_describe_execution_with_definition(gateway: Gateway, aws: FakeAws) -> None:
    described = gateway.run(
        "stepfunctions_describe_execution",
        json.dumps({"execution_arn": aws.executions["order-42"], "include_definition": True}),
    )
    assert described["status"] == "ABORTED"
    assert described["input"] == {"order": 42}
    assert described["definition"]["StartAt"] == "Charge"


def test_execution_history_flattens_event_details(gateway: Gateway, aws: FakeAws) -> None:
    history = gateway.run(
        "stepfunctions_get_execution_history", json.dumps({"execution_arn": aws.executions["order-41"], "limit": 5})
    )
    assert history["events"][0]["type"] == "ExecutionStarted"
    assert "roleArn" in history["events"][0]["details"]


def test_unknown_state_machine_suggests_similar_names(gateway: Gateway) -> None:
    with pytest.raises(NotFound, match="no state machine named 'orders-flow'; similar: orders-workflow"):
        gateway.run("stepfunctions_list_executions", '{"state_machine": "orders-flow"}')


def test_unknown_execution_passes_through(gateway: Gateway, aws: FakeAws) -> None:
    arn = aws.executions["order-41"].replace("order-41", "order-99")
    with pytest.raises(
        NotFound,
        match=r"^debug tool stepfunctions_describe_execution: Step Functions "
        r"DescribeExecution failed: ExecutionDoesNotExist",
    ):
        gateway.run("stepfunctions_describe_execution", json.dumps({"execution_arn": arn}))


def test_missing_aws_credentials_say_what_to_set(tmp_path: Path) -> None:
    gateway = Gateway(build_backends(DebugSettings(credentials_file=tmp_path / "absent.env")))
    with pytest.raises(FailedPrecondition) as caught:
        gateway.run("cloudwatch_list_log_groups", "{}")
    text = str(caught.value)
    assert text.startswith(
        "debug tool cloudwatch_list_log_groups: AWS credentials not found: set AWS_ACCESS_KEY_ID "
        "and AWS_SECRET_ACCESS_KEY"
    )
    assert "AWS_PROFILE" in text
    assert "~/.aws/credentials" in text
    assert str(tmp_path / "absent.env") in text


def test_missing_region_and_half_a_key_pair(tmp_path: Path) -> None:
    file = write_credentials(tmp_path / "debug.env", AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY)
    gateway = Gateway(build_backends(DebugSettings(credentials_file=file)))
    with pytest.raises(FailedPrecondition, match=r"AWS region not set: set AWS_REGION \(e.g. us-east-1\)"):
        gateway.run("stepfunctions_list_state_machines", "{}")
    write_credentials(file, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_REGION=REGION)
    with pytest.raises(FailedPrecondition, match="AWS credentials are incomplete: AWS_SECRET_ACCESS_KEY is not set"):
        gateway.run("stepfunctions_list_state_machines", "{}")


def test_unreachable_endpoint_is_unavailable(credentials_file: Path) -> None:
    gateway = Gateway(
        build_backends(
            DebugSettings(credentials_file=credentials_file, aws_endpoint_url=DEAD_ENDPOINT, timeout_seconds=2)
        )
    )
    with pytest.raises(
        Unavailable,
        match=r"^debug tool cloudwatch_list_log_groups: CloudWatch Logs "
        r"DescribeLogGroups failed: AWS unreachable",
    ):
        gateway.run("cloudwatch_list_log_groups", "{}")
