"""HTTP-level fakes of LangSmith and Jira Cloud: just the endpoints the debug backends use, with
payloads shaped like the real services' (field names, error bodies, status codes)."""

from __future__ import annotations

import base64
import re
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

LANGSMITH_KEY = "lsv2_pt_jarvis_test_key_never_logged"
JIRA_EMAIL = "dev@example.com"
JIRA_TOKEN = "ATATT3xJarvisTestTokenNeverLogged"

PROJECT_ID = "6a1e4b2c-0000-4000-8000-000000000001"
ROOT_RUN = "0b7c7a10-0000-4000-8000-0000000000a1"
CHILD_LLM = "0b7c7a10-0000-4000-8000-0000000000a2"
CHILD_TOOL = "0b7c7a10-0000-4000-8000-0000000000a3"
OK_RUN = "0b7c7a10-0000-4000-8000-0000000000b1"


def _run(
    run_id: str,
    name: str,
    run_type: str,
    parent: str | None,
    trace: str,
    error: str | None = None,
    start: str = "2026-11-22T03:00:00.000000",
    tokens: int = 0,
) -> dict[str, Any]:
    return {
        "id": run_id,
        "name": name,
        "run_type": run_type,
        "session_id": PROJECT_ID,
        "trace_id": trace,
        "parent_run_id": parent,
        "dotted_order": f"20261122T030000000000Z{run_id}",
        "status": "error" if error else "success",
        "error": error,
        "start_time": start,
        "end_time": start.replace("03:00:00", "03:00:02"),
        "inputs": {"question": "where is order 42?"},
        "outputs": None if error else {"answer": "shipped"},
        "extra": {"metadata": {"ls_model_name": "gpt-4o"}},
        "tags": ["prod"],
        "total_tokens": tokens,
        "prompt_tokens": tokens // 2,
        "completion_tokens": tokens // 2,
        "total_cost": None,
        "feedback_stats": {"correctness": {"n": 1, "avg": 0.0}} if error else None,
    }


RUNS = [
    _run(
        ROOT_RUN, "checkout-agent", "chain", None, ROOT_RUN, error="ToolException: payments API timed out", tokens=1450
    ),
    _run(CHILD_LLM, "ChatOpenAI", "llm", ROOT_RUN, ROOT_RUN, start="2026-11-22T03:00:00.100000", tokens=1450),
    _run(
        CHILD_TOOL,
        "charge_card",
        "tool",
        ROOT_RUN,
        ROOT_RUN,
        error="TimeoutError: payments API",
        start="2026-11-22T03:00:01.000000",
    ),
    _run(OK_RUN, "checkout-agent", "chain", None, OK_RUN, start="2026-11-22T02:00:00.000000", tokens=900),
]
PROJECTS: list[dict[str, Any]] = [
    {
        "id": PROJECT_ID,
        "name": "checkout-prod",
        "description": "production checkout agent",
        "start_time": "2026-10-01T00:00:00",
        "run_count": 2,
        "error_rate": 0.5,
        "last_run_start_time": "2026-11-22T03:00:00",
        "tenant_id": "t-1",
    },
]
FEEDBACK = [
    {
        "id": "f-1",
        "run_id": ROOT_RUN,
        "key": "correctness",
        "score": 0.0,
        "value": None,
        "comment": "agent gave up after the timeout",
        "correction": None,
        "created_at": "2026-11-22T03:05:00",
        "feedback_source": {"type": "app"},
    }
]


def langsmith_app() -> Starlette:
    """GET /sessions, GET /sessions/{id}, POST /runs/query, GET /runs/{id}, GET /feedback."""

    def authorized(request: Request) -> Response | None:
        if request.headers.get("x-api-key") != LANGSMITH_KEY:
            return JSONResponse({"detail": "Invalid token"}, status_code=401)
        return None

    async def sessions(request: Request) -> Response:
        if (denied := authorized(request)) is not None:
            return denied
        name, contains = request.query_params.get("name"), request.query_params.get("name_contains", "")
        found = [p for p in PROJECTS if (name is None or p["name"] == name) and contains in p["name"]]
        return JSONResponse(found)

    async def session(request: Request) -> Response:
        if (denied := authorized(request)) is not None:
            return denied
        found = [p for p in PROJECTS if p["id"] == request.path_params["id"]]
        return JSONResponse(found[0]) if found else JSONResponse({"detail": "Session not found"}, status_code=404)

    async def query(request: Request) -> Response:
        if (denied := authorized(request)) is not None:
            return denied
        body = await request.json()
        runs = RUNS
        if body.get("trace"):
            runs = [r for r in runs if r["trace_id"] == body["trace"]]
        if body.get("session"):
            runs = [r for r in runs if r["session_id"] in body["session"]]
        if body.get("is_root"):
            runs = [r for r in runs if r["parent_run_id"] is None]
        if body.get("error"):
            runs = [r for r in runs if r["error"]]
        if body.get("run_type"):
            runs = [r for r in runs if r["run_type"] == body["run_type"]]
        runs = sorted(runs, key=lambda r: r["start_time"], reverse=True)[: int(body.get("limit", 100))]
        return JSONResponse({"runs": runs, "cursors": {"next": None, "prev": None}})

    async def run(request: Request) -> Response:
        if (denied := authorized(request)) is not None:
            return denied
        found = [r for r in RUNS if r["id"] == request.path_params["id"]]
        return JSONResponse(found[0]) if found else JSONResponse({"detail": "Run not found"}, status_code=404)

    async def feedback(request: Request) -> Response:
        if (denied := authorized(request)) is not None:
            return denied
        return JSONResponse([f for f in FEEDBACK if f["run_id"] in request.query_params.getlist("run")])

    return Starlette(
        routes=[
            Route("/sessions", sessions),
            Route("/sessions/{id}", session),
            Route("/runs/query", query, methods=["POST"]),
            Route("/runs/{id}", run),
            Route("/feedback", feedback),
        ]
    )


def _adf(text: str) -> dict[str, Any]:
    return {
        "type": "doc",
        "version": 1,
        "content": [{"type": "paragraph", "content": [{"type": "text", "text": text}]}],
    }


def _issue(key: str, summary: str, status: str, assignee: str | None) -> dict[str, Any]:
    return {
        "id": str(10000 + int(key.split("-")[1])),
        "key": key,
        "self": f"https://example.atlassian.net/rest/api/3/issue/{key}",
        "fields": {
            "summary": summary,
            "status": {"name": status, "statusCategory": {"key": "indeterminate"}},
            "assignee": {"displayName": assignee, "accountId": "5b10a2844c20165700ede21g"} if assignee else None,
            "reporter": {"displayName": "Grace Hopper"},
            "priority": {"name": "High"},
            "issuetype": {"name": "Bug"},
            "created": "2026-11-20T09:12:00.000+0000",
            "updated": "2026-11-22T03:10:00.000+0000",
            "labels": ["payments"],
            "description": _adf(f"{summary}. Seen in CloudWatch at 03:00 UTC."),
        },
    }


ISSUES = [
    _issue("PAY-42", "Checkout fails when the card is expired", "In Progress", "Ada Lovelace"),
    _issue("PAY-43", "Payments API timeouts under load", "To Do", None),
]
COMMENTS = {
    "PAY-42": [
        {
            "id": "100",
            "author": {"displayName": "Ada Lovelace"},
            "body": _adf("Reproduced on staging."),
            "created": "2026-11-21T10:00:00.000+0000",
            "updated": "2026-11-21T10:00:00.000+0000",
        }
    ]
}
_CLAUSE = re.compile(r'^\s*(\w+)\s*=\s*"?([^"]+?)"?\s*$')


def _matches(issue: dict[str, Any], field: str, value: str) -> bool:
    if field == "project":
        return bool(issue["key"].startswith(value + "-"))
    return bool(issue["fields"]["status"]["name"].lower() == value.lower())


def jira_app() -> Starlette:
    """GET /rest/api/3/search/jql, GET /rest/api/3/issue/{key}, GET /rest/api/3/issue/{key}/comment."""
    expected = "Basic " + base64.b64encode(f"{JIRA_EMAIL}:{JIRA_TOKEN}".encode()).decode()
    missing = JSONResponse(
        {"errorMessages": ["Issue does not exist or you do not have permission to see it."], "errors": {}},
        status_code=404,
    )

    def authorized(request: Request) -> Response | None:
        if request.headers.get("authorization") != expected:
            return PlainTextResponse("Client must be authenticated to access this resource.", status_code=401)
        return None

    async def search(request: Request) -> Response:
        if (denied := authorized(request)) is not None:
            return denied
        jql = request.query_params.get("jql", "").split(" ORDER BY ")[0]
        issues = ISSUES
        for clause in filter(None, re.split(r"\s+AND\s+", jql, flags=re.IGNORECASE)):
            parsed = _CLAUSE.match(clause)
            if parsed is None or parsed.group(1) not in ("project", "status"):
                field = parsed.group(1) if parsed else clause.strip()
                return JSONResponse(
                    {
                        "errorMessages": [f"Field '{field}' does not exist or you do not have permission to view it."],
                        "errors": {},
                    },
                    status_code=400,
                )
            issues = [i for i in issues if _matches(i, parsed.group(1), parsed.group(2))]
        wanted = request.query_params.get("fields", "").split(",")
        limited = issues[: int(request.query_params.get("maxResults", 50))]
        shaped = [{**i, "fields": {k: v for k, v in i["fields"].items() if k in wanted}} for i in limited]
        return JSONResponse({"issues": shaped, "isLast": len(limited) == len(issues)})

    async def issue(request: Request) -> Response:
        if (denied := authorized(request)) is not None:
            return denied
        found = [i for i in ISSUES if i["key"] == request.path_params["key"]]
        return JSONResponse(found[0]) if found else missing

    async def comments(request: Request) -> Response:
        if (denied := authorized(request)) is not None:
            return denied
        key = request.path_params["key"]
        if key not in {i["key"] for i in ISSUES}:
            return missing
        found = COMMENTS.get(key, [])
        return JSONResponse({"startAt": 0, "maxResults": 50, "total": len(found), "comments": found})

    async def moved(request: Request) -> Response:
        # A site that moved: Jira answers with a redirect to the new address.
        return Response(status_code=301, headers={"location": f"https://moved.example/{request.path_params['rest']}"})

    return Starlette(
        routes=[
            Route("/rest/api/3/search/jql", search),
            Route("/rest/api/3/issue/{key}", issue),
            Route("/rest/api/3/issue/{key}/comment", comments),
            Route("/moved/{rest:path}", moved),
        ]
    )
