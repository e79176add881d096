"""Jira Cloud: JQL search, issues and their comments, over REST API v3."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from jarvis.common.params import Param
from jarvis.debug.backends.base import ToolSpec, ToolTable
from jarvis.debug.backends.credentials import Credentials
from jarvis.debug.backends.rest import RestClient

NAMES = ("JIRA_URL", "JIRA_EMAIL", "JIRA_API_TOKEN")
SEARCH_FIELDS = ("summary", "status", "assignee", "priority", "issuetype", "updated")
ISSUE_FIELDS = (
    "summary",
    "status",
    "assignee",
    "reporter",
    "priority",
    "issuetype",
    "created",
    "updated",
    "labels",
    "components",
    "fixVersions",
    "parent",
    "description",
    "resolution",
)
_KEY = Param("key", "string", "Issue key, e.g. PROJ-123", required=True)
_BLOCKS = {"paragraph", "heading", "blockquote", "codeBlock", "listItem", "rule", "panel", "tableRow"}


def adf_text(node: Any) -> str:
    """Plain text of an Atlassian Document Format value (v3 descriptions and comments are ADF)."""
    if node is None:
        return ""
    if isinstance(node, str):
        return node
    if isinstance(node, list):
        return "".join(adf_text(n) for n in node)
    if not isinstance(node, dict):
        return str(node)
    kind = node.get("type")
    if kind == "text":
        return str(node.get("text", ""))
    if kind == "hardBreak":
        return "\n"
    if kind in ("mention", "emoji", "status", "date", "inlineCard"):
        attrs = node.get("attrs", {})
        return str(attrs.get("text") or attrs.get("shortName") or attrs.get("url") or "")
    inner = adf_text(node.get("content", []))
    if kind == "listItem":
        inner = "- " + inner
    return inner.strip("\n") + "\n" if kind in _BLOCKS else inner


def _name(value: Any, key: str = "name") -> Any:
    return value.get(key) if isinstance(value, dict) else value


def _issue(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The fields an agent reads, flattened; unknown or custom fields are passed as Jira sent them."""
    fields = dict(raw.get("fields") or {})
    flat: dict[str, Any] = {"key": raw.get("key")}
    for field, value in fields.items():
        if value in (None, [], ""):
            continue
        if field in ("assignee", "reporter", "creator"):
            flat[field] = _name(value, "displayName")
        elif field == "issuetype":
            flat["type"] = _name(value)
        elif field in ("components", "fixVersions"):
            flat[field] = [_name(v) for v in value]
        elif field == "parent":
            flat["parent"] = value.get("key")
        elif field == "description":
            flat["description"] = adf_text(value).strip()
        elif isinstance(value, dict) and "name" in value:
            flat[field] = value["name"]
        else:
            flat[field] = value
    return flat


class JiraBackend:
    """Talks to JIRA_URL as JIRA_EMAIL with JIRA_API_TOKEN, all read at call time."""

    category = "jira"
    description = "Jira: JQL search, issue details and comments"

    def __init__(self, credentials: Credentials, timeout: float = 20.0) -> None:
        self._credentials = credentials
        self._timeout = timeout
        self._table = ToolTable(
            self.category,
            [
                (
                    ToolSpec(
                        "jira_search",
                        "Find issues with JQL",
                        (
                            Param(
                                "jql",
                                "string",
                                'JQL, e.g. project = PROJ AND status = "In Progress" ORDER BY updated DESC',
                                required=True,
                            ),
                            Param("limit", "integer", "Most issues to return", default=20, minimum=1, maximum=100),
                            Param("fields", "array", "Issue fields to return", default=SEARCH_FIELDS),
                        ),
                    ),
                    _search,
                ),
                (ToolSpec("jira_get_issue", "An issue's fields and description as text", (_KEY,)), _get_issue),
                (
                    ToolSpec(
                        "jira_get_comments",
                        "An issue's comments, newest first",
                        (
                            _KEY,
                            Param("limit", "integer", "Most comments to return", default=20, minimum=1, maximum=100),
                        ),
                    ),
                    _comments,
                ),
            ],
        )

    def tools(self) -> Sequence[ToolSpec]:
        return self._table.specs()

    def call(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        return self._table.call(tool, arguments, self._client)

    def _client(self) -> RestClient:
        found = self._credentials.require(
            NAMES,
            "Jira",
            extra=(
                "JIRA_URL is your site (https://your-team.atlassian.net); create an API token at "
                "https://id.atlassian.com/manage-profile/security/api-tokens."
            ),
        )
        return RestClient(
            "Jira",
            found["JIRA_URL"],
            auth=(found["JIRA_EMAIL"], found["JIRA_API_TOKEN"]),
            headers={"Accept": "application/json"},
            timeout=self._timeout,
            credentials_hint="check JIRA_URL, JIRA_EMAIL and JIRA_API_TOKEN",
        )


def _search(api: RestClient, args: Mapping[str, Any]) -> Any:
    # /search/jql is the v3 search that replaced /search (removed by Atlassian in 2025).
    response = (
        api.get(
            "/rest/api/3/search/jql",
            {"jql": args["jql"], "maxResults": args["limit"], "fields": ",".join(str(f) for f in args["fields"])},
        )
        or {}
    )
    issues = [_issue(i) for i in response.get("issues", [])]
    return {
        "jql": args["jql"],
        "count": len(issues),
        "issues": issues,
        "more": not response.get("isLast", True) or bool(response.get("nextPageToken")),
    }


def _get_issue(api: RestClient, args: Mapping[str, Any]) -> Any:
    raw = api.get(f"/rest/api/3/issue/{quote(args['key'], safe='')}", {"fields": ",".join(ISSUE_FIELDS)})
    return _issue(raw)


def _comments(api: RestClient, args: Mapping[str, Any]) -> Any:
    response = (
        api.get(
            f"/rest/api/3/issue/{quote(args['key'], safe='')}/comment",
            {"maxResults": args["limit"], "orderBy": "-created"},
        )
        or {}
    )
    comments = [
        {
            "id": c.get("id"),
            "author": _name(c.get("author"), "displayName"),
            "created": c.get("created"),
            "updated": c.get("updated"),
            "body": adf_text(c.get("body")).strip(),
        }
        for c in response.get("comments", [])
    ]
    return {"key": args["key"], "total": response.get("total", len(comments)), "comments": comments}
