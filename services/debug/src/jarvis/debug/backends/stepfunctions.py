"""AWS Step Functions: state machines, executions, their details and event history (boto3)."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from contextlib import closing
from datetime import datetime
from typing import TYPE_CHECKING, Any

from jarvis.common.errors import NotFound
from jarvis.common.params import Param
from jarvis.debug.backends.aws import REGION_PARAM, AwsClients, aws_errors
from jarvis.debug.backends.base import ToolSpec, ToolTable
from jarvis.debug.backends.times import iso

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

SERVICE = "Step Functions"
STATUSES = ("RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED", "PENDING_REDRIVE")
_EXECUTION = Param("execution_arn", "string", "Execution ARN (from stepfunctions_list_executions)", required=True)


def _when(value: Any) -> str | None:
    return iso(value) if isinstance(value, datetime) else None


def _json_or_text(value: Any) -> Any:
    """Execution input/output are JSON documents sent as strings; hand them back as JSON."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


class StepFunctionsBackend:
    """Reads Step Functions with the credentials found at call time."""

    category = "stepfunctions"
    description = "AWS Step Functions: state machines, executions, execution details and history"

    def __init__(self, aws: AwsClients) -> None:
        self._aws = aws
        self._table = ToolTable(
            self.category,
            [
                (
                    ToolSpec(
                        "stepfunctions_list_state_machines",
                        "List state machines",
                        (
                            Param(
                                "limit", "integer", "Most state machines to return", default=50, minimum=1, maximum=1000
                            ),
                            REGION_PARAM,
                        ),
                    ),
                    _list_machines,
                ),
                (
                    ToolSpec(
                        "stepfunctions_list_executions",
                        "Recent executions of a state machine, newest first",
                        (
                            Param("state_machine", "string", "State machine ARN or name", required=True),
                            Param("status", "string", "Only executions in this status", enum=STATUSES),
                            Param("limit", "integer", "Most executions to return", default=20, minimum=1, maximum=1000),
                            REGION_PARAM,
                        ),
                    ),
                    _list_executions,
                ),
                (
                    ToolSpec(
                        "stepfunctions_describe_execution",
                        "Status, input, output and error of an execution",
                        (
                            _EXECUTION,
                            Param(
                                "include_definition",
                                "boolean",
                                "Also return the state machine definition",
                                default=False,
                            ),
                            REGION_PARAM,
                        ),
                    ),
                    _describe,
                ),
                (
                    ToolSpec(
                        "stepfunctions_get_execution_history",
                        "Event history of an execution (states, errors)",
                        (
                            _EXECUTION,
                            Param("limit", "integer", "Most events to return", default=100, minimum=1, maximum=1000),
                            Param("reverse", "boolean", "Newest events first (where failures are)", default=False),
                            Param("include_data", "boolean", "Include state inputs and outputs", default=True),
                            REGION_PARAM,
                        ),
                    ),
                    _history,
                ),
            ],
        )

    def tools(self) -> Sequence[ToolSpec]:
        return self._table.specs()

    def call(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        return self._table.call(tool, arguments, lambda: closing(self._aws.stepfunctions(arguments.get("region", ""))))


def _list_machines(client: SFNClient, args: Mapping[str, Any]) -> Any:
    with aws_errors(f"{SERVICE} ListStateMachines"):
        response = client.list_state_machines(maxResults=args["limit"])
    machines = [
        {"name": m["name"], "arn": m["stateMachineArn"], "type": m.get("type"), "created": _when(m.get("creationDate"))}
        for m in response.get("stateMachines", [])
    ]
    return {"state_machines": machines, "more": bool(response.get("nextToken"))}


def _list_executions(client: SFNClient, args: Mapping[str, Any]) -> Any:
    arn = _machine_arn(client, args["state_machine"])
    request: dict[str, Any] = {"stateMachineArn": arn, "maxResults": args["limit"]}
    if args.get("status"):
        request["statusFilter"] = args["status"]
    with aws_errors(f"{SERVICE} ListExecutions"):
        response = client.list_executions(**request)
    executions = [
        {
            "name": e["name"],
            "arn": e["executionArn"],
            "status": e.get("status"),
            "started": _when(e.get("startDate")),
            "stopped": _when(e.get("stopDate")),
        }
        for e in response.get("executions", [])
    ]
    return {"state_machine_arn": arn, "executions": executions, "more": bool(response.get("nextToken"))}


def _describe(client: SFNClient, args: Mapping[str, Any]) -> Any:
    with aws_errors(f"{SERVICE} DescribeExecution"):
        execution = client.describe_execution(executionArn=args["execution_arn"])
    result: dict[str, Any] = {
        "name": execution.get("name"),
        "arn": execution.get("executionArn"),
        "state_machine_arn": execution.get("stateMachineArn"),
        "status": execution.get("status"),
        "started": _when(execution.get("startDate")),
        "stopped": _when(execution.get("stopDate")),
        "input": _json_or_text(execution.get("input")),
        "output": _json_or_text(execution.get("output")),
        "error": execution.get("error"),
        "cause": _json_or_text(execution.get("cause")),
    }
    if args["include_definition"]:
        with aws_errors(f"{SERVICE} DescribeStateMachineForExecution"):
            machine = client.describe_state_machine_for_execution(executionArn=args["execution_arn"])
        result["definition"] = _json_or_text(machine.get("definition"))
    return result


def _history(client: SFNClient, args: Mapping[str, Any]) -> Any:
    with aws_errors(f"{SERVICE} GetExecutionHistory"):
        response = client.get_execution_history(
            executionArn=args["execution_arn"],
            maxResults=args["limit"],
            reverseOrder=args["reverse"],
            includeExecutionData=args["include_data"],
        )
    events = []
    for event in response.get("events", []):
        # Each event carries exactly one "<kind>EventDetails" member; flatten it to "details".
        details = next((v for k, v in event.items() if k.endswith("EventDetails")), None)
        events.append(
            {
                "id": event.get("id"),
                "type": event.get("type"),
                "time": _when(event.get("timestamp")),
                "previous_id": event.get("previousEventId"),
                "details": details,
            }
        )
    return {"execution_arn": args["execution_arn"], "events": events, "more": bool(response.get("nextToken"))}


def _machine_arn(client: SFNClient, name_or_arn: str) -> str:
    """Accept a name for convenience: agents often know "orders-workflow", not its ARN."""
    if name_or_arn.startswith("arn:"):
        return name_or_arn
    names: dict[str, str] = {}
    with aws_errors(f"{SERVICE} ListStateMachines"):
        for page in client.get_paginator("list_state_machines").paginate():
            names.update({m["name"]: m["stateMachineArn"] for m in page.get("stateMachines", [])})
    if name_or_arn in names:
        return names[name_or_arn]
    similar = difflib.get_close_matches(name_or_arn, list(names), n=5, cutoff=0.5)
    hint = f"; similar: {', '.join(similar)}" if similar else "; see stepfunctions_list_state_machines"
    raise NotFound(f"{SERVICE}: no state machine named '{name_or_arn}'{hint}")
