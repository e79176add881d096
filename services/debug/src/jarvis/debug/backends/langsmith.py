"""LangSmith: projects, runs, a run's trace tree and feedback, over its REST API."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from jarvis.common.errors import NotFound
from jarvis.common.params import Param
from jarvis.debug.backends.base import ToolSpec, ToolTable
from jarvis.debug.backends.credentials import Credentials
from jarvis.debug.backends.rest import RestClient
from jarvis.debug.backends.times import TIME_HELP, iso, parse_time

DEFAULT_ENDPOINT = "https://api.smith.langchain.com"
RUN_TYPES = ("llm", "chain", "tool", "retriever", "prompt", "parser", "embedding")
_NAMES = ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGSMITH_ENDPOINT", "LANGCHAIN_ENDPOINT")
_RUN_ID = Param("run_id", "string", "Run id (UUID)", required=True)
_PREVIEW_CHARS = 20_000  # inputs/outputs beyond this are cut: one prompt can be megabytes
_TREE_PAGES = 5  # up to 500 runs in one trace tree
_SUMMARY = (
    "id",
    "name",
    "run_type",
    "status",
    "error",
    "start_time",
    "end_time",
    "parent_run_id",
    "trace_id",
    "total_tokens",
    "total_cost",
    "tags",
)


def _run_path(run_id: str) -> str:
    return f"/runs/{quote(run_id, safe='')}"  # an id is one path segment, never "../"


def _summary(run: Mapping[str, Any]) -> dict[str, Any]:
    return {k: run.get(k) for k in _SUMMARY if run.get(k) not in (None, [], "")}


def _bounded(value: Any) -> Any:
    text = json.dumps(value, default=str)
    if len(text) <= _PREVIEW_CHARS:
        return value
    return {"truncated": True, "chars": len(text), "preview": text[:_PREVIEW_CHARS]}


class LangSmithBackend:
    """Talks to LANGSMITH_ENDPOINT with LANGSMITH_API_KEY, both read at call time."""

    category = "langsmith"
    description = "LangSmith: projects, runs, trace trees and feedback of LLM applications"

    def __init__(self, credentials: Credentials, timeout: float = 20.0) -> None:
        self._credentials = credentials
        self._timeout = timeout
        self._table = ToolTable(
            self.category,
            [
                (
                    ToolSpec(
                        "langsmith_list_projects",
                        "List tracing projects",
                        (
                            Param("name_contains", "string", "Only projects whose name contains this", default=""),
                            Param("limit", "integer", "Most projects to return", default=20, minimum=1, maximum=100),
                        ),
                    ),
                    _projects,
                ),
                (
                    ToolSpec(
                        "langsmith_list_runs",
                        "Recent runs of a project, newest first",
                        (
                            Param("project", "string", "Project name or id", required=True),
                            Param("limit", "integer", "Most runs to return", default=20, minimum=1, maximum=100),
                            Param("errors_only", "boolean", "Only runs that failed", default=False),
                            Param("root_only", "boolean", "Only root runs (whole traces)", default=True),
                            Param("run_type", "string", "Only runs of this type", enum=RUN_TYPES),
                            Param("start", "string", f"Runs started after: {TIME_HELP}", default="1d"),
                            Param(
                                "filter",
                                "string",
                                'LangSmith filter, e.g. and(eq(name, "agent"), gt(latency, 5))',
                                default="",
                            ),
                        ),
                    ),
                    _runs,
                ),
                (
                    ToolSpec("langsmith_get_run", "One run with its inputs, outputs, error and metadata", (_RUN_ID,)),
                    _run,
                ),
                (
                    ToolSpec(
                        "langsmith_trace_tree",
                        "The tree of runs in a run's trace: names, status, timing, errors",
                        (_RUN_ID,),
                    ),
                    _tree,
                ),
                (
                    ToolSpec(
                        "langsmith_list_feedback",
                        "Feedback (scores, comments) given on a run",
                        (
                            _RUN_ID,
                            Param(
                                "limit",
                                "integer",
                                "Most feedback entries to return",
                                default=20,
                                minimum=1,
                                maximum=100,
                            ),
                        ),
                    ),
                    _feedback,
                ),
            ],
        )

    def tools(self) -> Sequence[ToolSpec]:
        return self._table.specs()

    def call(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        return self._table.call(tool, arguments, self._client)

    def _client(self) -> RestClient:
        # The LANGCHAIN_* names are what older LangSmith SDKs read; LANGSMITH_* win.
        found = self._credentials.values(_NAMES)
        key = found.get("LANGSMITH_API_KEY") or found.get("LANGCHAIN_API_KEY", "")
        if not key:
            self._credentials.require(
                ["LANGSMITH_API_KEY"],
                "LangSmith",
                extra=(f"For a self-hosted or EU instance also set LANGSMITH_ENDPOINT (default {DEFAULT_ENDPOINT})."),
            )
        endpoint = found.get("LANGSMITH_ENDPOINT") or found.get("LANGCHAIN_ENDPOINT") or DEFAULT_ENDPOINT
        return RestClient(
            "LangSmith",
            endpoint,
            headers={"x-api-key": key},
            timeout=self._timeout,
            credentials_hint="check LANGSMITH_API_KEY and LANGSMITH_ENDPOINT",
        )


def _projects(api: RestClient, args: Mapping[str, Any]) -> Any:
    params: dict[str, Any] = {"limit": args["limit"]}
    if args["name_contains"]:
        params["name_contains"] = args["name_contains"]
    projects = api.get("/sessions", params) or []
    keys = ("id", "name", "description", "run_count", "error_rate", "last_run_start_time", "start_time")
    return {"projects": [{k: p.get(k) for k in keys if p.get(k) is not None} for p in projects]}


def _project_id(api: RestClient, project: str) -> str:
    """Accept a project's name or id: agents know names, the runs query takes ids."""
    found = api.get("/sessions", {"name": project, "limit": 1}) or []
    if found:
        return str(found[0]["id"])
    try:
        return str(api.get(f"/sessions/{quote(project, safe='')}")["id"])
    except NotFound:
        raise NotFound(f"LangSmith: no project named '{project}'; see langsmith_list_projects") from None


def _runs(api: RestClient, args: Mapping[str, Any]) -> Any:
    body: dict[str, Any] = {
        "session": [_project_id(api, args["project"])],
        "limit": args["limit"],
        "start_time": iso(parse_time(args["start"], "start")),
    }
    if args["root_only"]:
        body["is_root"] = True
    if args["errors_only"]:
        body["error"] = True
    if args.get("run_type"):
        body["run_type"] = args["run_type"]
    if args["filter"]:
        body["filter"] = args["filter"]
    runs = (api.post("/runs/query", body) or {}).get("runs", [])
    return {"project": args["project"], "runs": [_summary(r) for r in runs[: args["limit"]]]}


def _run(api: RestClient, args: Mapping[str, Any]) -> Any:
    run = dict(api.get(_run_path(args["run_id"])))
    for field in ("inputs", "outputs", "extra", "events"):
        if field in run:
            run[field] = _bounded(run[field])
    return run


def _tree(api: RestClient, args: Mapping[str, Any]) -> Any:
    root = api.get(_run_path(args["run_id"]))
    trace_id = root.get("trace_id") or root["id"]
    runs: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(_TREE_PAGES):
        page = api.post("/runs/query", {"trace": trace_id, "limit": 100, **({"cursor": cursor} if cursor else {})})
        runs += (page or {}).get("runs", [])
        cursor = ((page or {}).get("cursors") or {}).get("next")
        if not cursor:
            break
    children: dict[str | None, list[dict[str, Any]]] = {}
    for run in sorted(runs, key=lambda r: str(r.get("start_time") or "")):
        children.setdefault(run.get("parent_run_id"), []).append(run)

    def node(run: Mapping[str, Any], depth: int) -> dict[str, Any]:
        summary = {k: v for k, v in _summary(run).items() if k not in ("trace_id", "parent_run_id")}
        if depth < 50:  # a malformed parent chain must not recurse forever
            kids = [node(c, depth + 1) for c in children.get(str(run["id"]), [])]
            if kids:
                summary["children"] = kids
        return summary

    tops = children.get(None) or [root]
    return {"trace_id": trace_id, "runs": len(runs), "more": bool(cursor), "tree": [node(r, 0) for r in tops]}


def _feedback(api: RestClient, args: Mapping[str, Any]) -> Any:
    entries = api.get("/feedback", {"run": args["run_id"], "limit": args["limit"]}) or []
    keys = ("id", "key", "score", "value", "comment", "correction", "created_at", "feedback_source")
    return {
        "run_id": args["run_id"],
        "feedback": [{k: f.get(k) for k in keys if f.get(k) is not None} for f in entries],
    }
