"""CloudWatch Logs: log groups, streams, filtered events and Logs Insights queries (boto3)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from contextlib import closing
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from jarvis.common.params import Param
from jarvis.debug.backends.aws import REGION_PARAM, AwsClients, aws_errors
from jarvis.debug.backends.base import ToolSpec, ToolTable
from jarvis.debug.backends.times import TIME_HELP, epoch_ms, iso, parse_time

if TYPE_CHECKING:
    from mypy_boto3_logs import CloudWatchLogsClient

SERVICE = "CloudWatch Logs"
_START = Param("start", "string", f"From when: {TIME_HELP}", default="1h")
_END = Param("end", "string", "Until when (same formats)", default="now")
_LOG_GROUP = Param("log_group", "string", "Log group name, e.g. /aws/lambda/my-fn", required=True)
_MAX_PAGES = 20  # filter_log_events may return empty pages; stop following tokens after this many


def _ms_to_iso(value: Any) -> str | None:
    return iso(datetime.fromtimestamp(value / 1000, UTC)) if isinstance(value, int | float) else None


class CloudWatchBackend:
    """Reads CloudWatch Logs with the credentials found at call time."""

    category = "cloudwatch"
    description = "AWS CloudWatch Logs: log groups, streams, filtered events, Logs Insights queries"

    def __init__(self, aws: AwsClients) -> None:
        self._aws = aws
        self._table = ToolTable(
            self.category,
            [
                (
                    ToolSpec(
                        "cloudwatch_list_log_groups",
                        "List log groups, optionally by name prefix",
                        (
                            Param("prefix", "string", "Log group name prefix, e.g. /aws/lambda/", default=""),
                            Param("limit", "integer", "Most groups to return", default=50, minimum=1, maximum=50),
                            REGION_PARAM,
                        ),
                    ),
                    _list_groups,
                ),
                (
                    ToolSpec(
                        "cloudwatch_list_log_streams",
                        "List a log group's streams, most recent events first",
                        (
                            _LOG_GROUP,
                            Param(
                                "prefix", "string", "Stream name prefix (sorts by name instead of recency)", default=""
                            ),
                            Param("limit", "integer", "Most streams to return", default=20, minimum=1, maximum=50),
                            REGION_PARAM,
                        ),
                    ),
                    _list_streams,
                ),
                (
                    ToolSpec(
                        "cloudwatch_filter_logs",
                        "Events of a log group matching a filter pattern in a time range",
                        (
                            _LOG_GROUP,
                            Param(
                                "filter_pattern",
                                "string",
                                'CloudWatch filter pattern, e.g. "ERROR" or '
                                '"{ $.level = \\"error\\" }"; empty matches all',
                                default="",
                            ),
                            _START,
                            _END,
                            Param("streams", "array", "Only these stream names"),
                            Param("limit", "integer", "Most events to return", default=100, minimum=1, maximum=1000),
                            REGION_PARAM,
                        ),
                    ),
                    _filter,
                ),
                (
                    ToolSpec(
                        "cloudwatch_insights_query",
                        "Run a Logs Insights query and wait for its results",
                        (
                            Param("log_groups", "array", "Log group names to query", required=True),
                            Param(
                                "query",
                                "string",
                                "Insights query, e.g. fields @timestamp, @message | filter "
                                "@message like /ERROR/ | sort @timestamp desc",
                                required=True,
                            ),
                            _START,
                            _END,
                            Param("limit", "integer", "Most rows to return", default=100, minimum=1, maximum=10000),
                            Param(
                                "wait_seconds",
                                "integer",
                                "How long to wait for completion; 0 returns the query id "
                                "at once (then use cloudwatch_insights_results)",
                                default=10,
                                minimum=0,
                                maximum=20,
                            ),
                            REGION_PARAM,
                        ),
                    ),
                    _insights_query,
                ),
                (
                    ToolSpec(
                        "cloudwatch_insights_results",
                        "Status and results of a Logs Insights query",
                        (
                            Param("query_id", "string", "Id returned by cloudwatch_insights_query", required=True),
                            REGION_PARAM,
                        ),
                    ),
                    _insights_results,
                ),
            ],
        )

    def tools(self) -> Sequence[ToolSpec]:
        return self._table.specs()

    def call(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        return self._table.call(tool, arguments, lambda: closing(self._aws.logs(arguments.get("region", ""))))


def _list_groups(client: CloudWatchLogsClient, args: Mapping[str, Any]) -> Any:
    request: dict[str, Any] = {"limit": args["limit"]}
    if args["prefix"]:
        request["logGroupNamePrefix"] = args["prefix"]
    with aws_errors(f"{SERVICE} DescribeLogGroups"):
        response = client.describe_log_groups(**request)
    groups = [
        {
            "name": g.get("logGroupName"),
            "created": _ms_to_iso(g.get("creationTime")),
            "retention_days": g.get("retentionInDays"),
            "stored_bytes": g.get("storedBytes"),
        }
        for g in response.get("logGroups", [])
    ]
    return {"log_groups": groups, "more": bool(response.get("nextToken"))}


def _list_streams(client: CloudWatchLogsClient, args: Mapping[str, Any]) -> Any:
    request: dict[str, Any] = {"logGroupName": args["log_group"], "limit": args["limit"]}
    # AWS refuses a name prefix together with ordering by last event time.
    if args["prefix"]:
        request["logStreamNamePrefix"] = args["prefix"]
    else:
        request.update(orderBy="LastEventTime", descending=True)
    with aws_errors(f"{SERVICE} DescribeLogStreams"):
        response = client.describe_log_streams(**request)
    streams = [
        {
            "name": s.get("logStreamName"),
            "first_event": _ms_to_iso(s.get("firstEventTimestamp")),
            "last_event": _ms_to_iso(s.get("lastEventTimestamp")),
        }
        for s in response.get("logStreams", [])
    ]
    return {"log_group": args["log_group"], "streams": streams, "more": bool(response.get("nextToken"))}


def _filter(client: CloudWatchLogsClient, args: Mapping[str, Any]) -> Any:
    start, end = parse_time(args["start"], "start"), parse_time(args["end"], "end")
    request: dict[str, Any] = {
        "logGroupName": args["log_group"],
        "startTime": epoch_ms(start),
        "endTime": epoch_ms(end),
    }
    if args["filter_pattern"]:
        request["filterPattern"] = args["filter_pattern"]
    if args.get("streams"):
        request["logStreamNames"] = [str(s) for s in args["streams"]]
    limit: int = args["limit"]
    events: list[dict[str, Any]] = []
    token = ""
    for _ in range(_MAX_PAGES):
        with aws_errors(f"{SERVICE} FilterLogEvents"):
            page: dict[str, Any] = {**request, "limit": limit - len(events)}
            if token:
                page["nextToken"] = token
            response = client.filter_log_events(**page)
        events += [
            {
                "time": _ms_to_iso(e.get("timestamp")),
                "stream": e.get("logStreamName"),
                "message": str(e.get("message", "")).rstrip("\n"),
            }
            for e in response.get("events", [])
        ]
        token = response.get("nextToken", "")
        if not token or len(events) >= limit:
            break
    return {
        "log_group": args["log_group"],
        "start": iso(start),
        "end": iso(end),
        "count": len(events),
        "events": events[:limit],
        "more": bool(token),
    }


def _insights_query(client: CloudWatchLogsClient, args: Mapping[str, Any]) -> Any:
    start, end = parse_time(args["start"], "start"), parse_time(args["end"], "end")
    with aws_errors(f"{SERVICE} StartQuery"):
        started = client.start_query(
            logGroupNames=[str(g) for g in args["log_groups"]],
            queryString=args["query"],
            startTime=int(start.timestamp()),
            endTime=int(end.timestamp()),
            limit=args["limit"],
        )
    query_id = started["queryId"]
    deadline = time.monotonic() + args["wait_seconds"]
    while True:
        result = _results(client, query_id)
        if result["status"] not in ("Scheduled", "Running") or time.monotonic() >= deadline:
            return result
        time.sleep(0.5)


def _insights_results(client: CloudWatchLogsClient, args: Mapping[str, Any]) -> Any:
    return _results(client, args["query_id"])


def _results(client: CloudWatchLogsClient, query_id: str) -> dict[str, Any]:
    with aws_errors(f"{SERVICE} GetQueryResults"):
        response = client.get_query_results(queryId=query_id)
    # Rows come as [{field, value}, ...]; @ptr is an internal pointer nobody reads.
    rows = [
        {c["field"]: c.get("value") for c in row if c.get("field") != "@ptr"} for row in response.get("results", [])
    ]
    stats = response.get("statistics", {})
    return {
        "query_id": query_id,
        "status": response.get("status"),
        "rows": rows,
        "records_matched": stats.get("recordsMatched"),
        "records_scanned": stats.get("recordsScanned"),
    }
