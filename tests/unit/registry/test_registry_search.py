"""Search: tokenisation of identifiers, BM25 ranking, exact-name priority, matched tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from jarvis.registry.app import Registry
from jarvis.registry.domain.records import Tool
from jarvis.registry.domain.search import Document, search, tokenize

LIVEMCPBENCH = Path("/work/shared/datasets/livemcpbench/tools.json")


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("read_text_file", ["read", "text", "file"]),
        ("getTinyImage", ["get", "tiny", "image"]),
        ("resolve-library-id", ["resolve", "library", "id"]),
        ("HTTPRequest", ["http", "request"]),
        ("Searching the files", ["search", "file"]),
        ("queries", ["query"]),
    ],
)
def test_tokenize_splits_identifiers(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens


DOCS = [
    Document(
        "git", "Git repository operations", True, (Tool("git_commit", "Record changes"), Tool("git_log", "History"))
    ),
    Document("github", "GitHub API", False, (Tool("create_pull_request", "Open a pull request"),)),
    Document("time", "Current time and timezone conversion", False, (Tool("convert_time", "Convert time"),)),
    Document("weather", "Forecasts", False, (Tool("get_forecast", "Weather forecast for a city"),)),
]


def test_ranking_prefers_name_and_tool_matches() -> None:
    hits = search("pull request", DOCS)
    assert [h.name for h in hits] == ["github"]
    assert hits[0].matched_tools == ["create_pull_request"]
    assert hits[0].installed is False


def test_exact_name_match_ranks_first() -> None:
    docs = [*DOCS, Document("time-tracker", "time time time tracking of time", False)]
    hits = search("time", docs)
    assert hits[0].name == "time"
    assert hits[1].name == "time-tracker"


def test_no_match_and_limit() -> None:
    assert search("zebra", DOCS) == []
    assert search("", DOCS) == []
    assert len(search("time forecast git github", DOCS, limit=2)) == 2


def test_search_over_installed_and_imported_catalog(registry: Registry) -> None:
    registry.catalog.import_file(LIVEMCPBENCH.read_bytes(), "tools.json")
    registry.servers.install("git")
    hits = registry.search("stock price")
    assert hits[0].name in {"yahoo-finance", "yfmcp"}
    assert any("stock" in t for t in hits[0].matched_tools)
    hits = registry.search("commit changes")
    assert hits[0].name == "git"
    assert hits[0].installed
    assert "git_commit" in hits[0].matched_tools
    assert [h.name for h in registry.search("git", installed_only=True)] == ["git"]
    names = [h.name for h in registry.search("git")]
    assert names.count("git") == 1  # the installed server hides its catalog entry
