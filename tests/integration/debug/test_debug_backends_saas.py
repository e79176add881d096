"""LangSmith and Jira backends: the real HTTP client against local fakes of their REST APIs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jarvis.common.errors import FailedPrecondition, InvalidArgument, NotFound
from jarvis.debug.app import build_backends
from jarvis.debug.domain.gateway import Gateway
from jarvis.debug.settings import DebugSettings
from tests.support.debug_fixtures import write_credentials
from tests.support.saas_fakes import CHILD_LLM, CHILD_TOOL, JIRA_EMAIL, OK_RUN, PROJECT_ID, ROOT_RUN


def test_langsmith_projects(gateway: Gateway) -> None:
    projects = gateway.run("langsmith_list_projects", '{"name_contains": "checkout"}')["projects"]
    assert projects == [
        {
            "id": PROJECT_ID,
            "name": "checkout-prod",
            "description": "production checkout agent",
            "run_count": 2,
            "error_rate": 0.5,
            "last_run_start_time": "2026-11-22T03:00:00",
            "start_time": "2026-10-01T00:00:00",
        }
    ]


def test_langsmith_runs_of_a_project_by_name(gateway: Gateway) -> None:
    runs = gateway.run("langsmith_list_runs", '{"project": "checkout-prod", "start": "30d"}')["runs"]
    assert [r["id"] for r in runs] == [ROOT_RUN, OK_RUN]
    failed = gateway.run("langsmith_list_runs", json.dumps({"project": PROJECT_ID, "errors_only": True}))["runs"]
    assert [(r["id"], r["status"], r["error"]) for r in failed] == [
        (ROOT_RUN, "error", "ToolException: payments API timed out")
    ]
    assert "inputs" not in failed[0]  # summaries stay small; langsmith_get_run has the rest


def test_langsmith_run_trace_tree_and_feedback(gateway: Gateway) -> None:
    run = gateway.run("langsmith_get_run", json.dumps({"run_id": ROOT_RUN}))
    assert run["inputs"] == {"question": "where is order 42?"}
    assert run["error"].startswith("ToolException")
    tree = gateway.run("langsmith_trace_tree", json.dumps({"run_id": CHILD_TOOL}))
    assert tree["trace_id"] == ROOT_RUN
    assert tree["runs"] == 3
    (root,) = tree["tree"]
    assert root["name"] == "checkout-agent"
    assert [(c["id"], c["run_type"]) for c in root["children"]] == [(CHILD_LLM, "llm"), (CHILD_TOOL, "tool")]
    feedback = gateway.run("langsmith_list_feedback", json.dumps({"run_id": ROOT_RUN}))["feedback"]
    assert [(f["key"], f["score"], f["comment"]) for f in feedback] == [
        ("correctness", 0.0, "agent gave up after the timeout")
    ]


def test_langsmith_errors_pass_through_with_the_call(gateway: Gateway) -> None:
    with pytest.raises(
        NotFound,
        match=r"^debug tool langsmith_get_run: LangSmith GET /runs/nope answered 404: "
        r"Run not found$",
    ):
        gateway.run("langsmith_get_run", '{"run_id": "nope"}')
    with pytest.raises(NotFound, match="no project named 'missing'; see langsmith_list_projects"):
        gateway.run("langsmith_list_runs", '{"project": "missing"}')


def test_langsmith_rejected_key_and_missing_key(tmp_path: Path, langsmith_url: str) -> None:
    file = write_credentials(tmp_path / "debug.env", LANGSMITH_API_KEY="wrong", LANGSMITH_ENDPOINT=langsmith_url)
    gateway = Gateway(build_backends(DebugSettings(credentials_file=file)))
    with pytest.raises(FailedPrecondition) as caught:
        gateway.run("langsmith_list_projects", "{}")
    assert str(caught.value) == (
        "debug tool langsmith_list_projects: LangSmith GET /sessions answered 401: "
        "Invalid token; check LANGSMITH_API_KEY and LANGSMITH_ENDPOINT"
    )
    file.unlink()
    with pytest.raises(
        FailedPrecondition,
        match=r"LangSmith is not configured: set LANGSMITH_API_KEY in .*"
        r"also set LANGSMITH_ENDPOINT",
    ):
        gateway.run("langsmith_list_projects", "{}")


def test_jira_search_issue_and_comments(gateway: Gateway) -> None:
    found = gateway.run("jira_search", '{"jql": "project = PAY AND status = \\"In Progress\\" ORDER BY updated DESC"}')
    assert found["count"] == 1
    assert found["more"] is False
    assert found["issues"] == [
        {
            "key": "PAY-42",
            "summary": "Checkout fails when the card is expired",
            "status": "In Progress",
            "assignee": "Ada Lovelace",
            "priority": "High",
            "type": "Bug",
            "updated": "2026-11-22T03:10:00.000+0000",
        }
    ]
    issue = gateway.run("jira_get_issue", '{"key": "PAY-42"}')
    assert issue["description"] == "Checkout fails when the card is expired. Seen in CloudWatch at 03:00 UTC."
    assert issue["reporter"] == "Grace Hopper"
    assert issue["labels"] == ["payments"]
    comments = gateway.run("jira_get_comments", '{"key": "PAY-42"}')
    assert comments["comments"][0]["body"] == "Reproduced on staging."
    assert comments["comments"][0]["author"] == "Ada Lovelace"


def test_jira_errors_pass_through_with_jiras_message(gateway: Gateway) -> None:
    with pytest.raises(InvalidArgument) as caught:
        gateway.run("jira_search", '{"jql": "sprint = 5"}')
    assert str(caught.value) == (
        "debug tool jira_search: Jira GET /rest/api/3/search/jql answered 400: Field "
        "'sprint' does not exist or you do not have permission to view it."
    )
    with pytest.raises(NotFound, match="Jira GET /rest/api/3/issue/PAY-999 answered 404: Issue does not exist"):
        gateway.run("jira_get_issue", '{"key": "PAY-999"}')


def test_ids_stay_one_path_segment_and_redirects_are_not_followed(
    tmp_path: Path, gateway: Gateway, jira_url: str
) -> None:
    with pytest.raises(NotFound, match=r"LangSmith GET /runs/..%2Ffeedback answered 404"):
        gateway.run("langsmith_get_run", '{"run_id": "../feedback"}')
    file = write_credentials(
        tmp_path / "moved.env", JIRA_URL=f"{jira_url}/moved", JIRA_EMAIL=JIRA_EMAIL, JIRA_API_TOKEN="t"
    )
    moved = Gateway(build_backends(DebugSettings(credentials_file=file)))
    with pytest.raises(
        FailedPrecondition,
        match=r"was redirected to https://moved.example/rest/api/3/issue/PAY-42; "
        r"set the service URL to the address it redirects to",
    ):
        moved.run("jira_get_issue", '{"key": "PAY-42"}')


def test_jira_rejected_token_and_missing_settings(tmp_path: Path, jira_url: str) -> None:
    file = write_credentials(tmp_path / "debug.env", JIRA_URL=jira_url, JIRA_EMAIL=JIRA_EMAIL, JIRA_API_TOKEN="x")
    gateway = Gateway(build_backends(DebugSettings(credentials_file=file)))
    with pytest.raises(
        FailedPrecondition,
        match=r"answered 401: Client must be authenticated to access this "
        r"resource\.; check JIRA_URL, JIRA_EMAIL and JIRA_API_TOKEN",
    ):
        gateway.run("jira_get_issue", '{"key": "PAY-42"}')
    write_credentials(file, JIRA_URL=jira_url)
    with pytest.raises(FailedPrecondition, match=r"Jira is not configured: set JIRA_EMAIL, JIRA_API_TOKEN in "):
        gateway.run("jira_get_issue", '{"key": "PAY-42"}')
