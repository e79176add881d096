"""The discovery index: tokenizer, BM25F scoring, incremental updates, filtering, and its size budget."""

from __future__ import annotations

import time

import pytest

from jarvis.aggregator.discovery.entry import ToolEntry, schema_terms
from jarvis.aggregator.discovery.index import ToolIndex
from jarvis.aggregator.discovery.text import MAX_CLAUSES, analyze, clauses, normalize_name, words


def entry(name: str, description: str = "", **kw: object) -> ToolEntry:
    return ToolEntry(
        name=name,
        description=description,
        source=str(kw.pop("source", "srv")),
        kind="server",
        tool=str(kw.pop("tool", name)),
        **kw,  # type: ignore[arg-type]
    )


def test_words_split_identifiers_of_every_style() -> None:
    assert words("readFile") == ["read", "file"]
    assert words("HTTPServer_list-items") == ["http", "server", "list", "items"]
    assert words("get2FACode") == ["get", "2", "fa", "code"]
    assert words("jarvis_server") == ["jarvis", "server"]


def test_unspaced_scripts_become_character_pairs() -> None:
    assert words("获取天气") == ["获取", "取天", "天气"]


def test_analyze_drops_filler_and_stems() -> None:
    assert analyze("Can you help me find the files?") == ["find", "file"]
    assert analyze("running queries") == analyze("run query")
    assert analyze("the of and") == []


def test_names_compare_without_case_or_separators() -> None:
    assert normalize_name("Jarvis-Server") == normalize_name("jarvis_server") == "jarvis_server"


def test_schema_terms_reach_nested_parameters_and_enums() -> None:
    schema = {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["list", "create"]},
            "filter": {"type": "object", "properties": {"ownerLogin": {"type": "string"}}},
            "tags": {"type": "array", "items": {"anyOf": [{"enum": ["red", 3]}]}},
        },
    }
    names, enums = schema_terms(schema)
    assert sorted(names) == ["action", "filter", "ownerLogin", "tags"]
    assert sorted(enums) == ["create", "list", "red"]


@pytest.fixture
def index() -> ToolIndex:
    return ToolIndex(
        [
            entry(
                "weather__forecast",
                "Get the weather forecast for a city",
                tool="forecast",
                input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
            ),
            entry("files__read_file", "Read the contents of a file", tool="read_file"),
            entry("files__write_file", "Create or overwrite a file", tool="write_file"),
            entry(
                "jarvis_server",
                "Servers list|info|install",
                source="jarvis",
                keywords=("list", "info", "install"),
                input_schema={"type": "object", "properties": {"action": {"enum": ["list", "info", "install"]}}},
            ),
        ]
    )


def test_name_words_outweigh_description_words(index: ToolIndex) -> None:
    hits = index.search("read file", 3)
    assert [h.entry.name for h in hits][:2] == ["files__read_file", "files__write_file"]
    assert hits[0].score > hits[1].score > 0


def test_parameters_and_enum_values_are_searchable(index: ToolIndex) -> None:
    assert index.search("city", 1)[0].entry.name == "weather__forecast"
    assert index.search("install", 1)[0].entry.name == "jarvis_server"


def test_an_exact_name_ranks_first(index: ToolIndex) -> None:
    assert index.search("files__write_file", 1)[0].entry.name == "files__write_file"
    assert index.search("Jarvis-Server", 1)[0].entry.name == "jarvis_server"


def test_limit_and_nothing_found(index: ToolIndex) -> None:
    assert len(index.search("file", 1)) == 1
    assert index.search("zzqx", 5) == []
    assert index.search("", 5) == []


def test_filter_never_returns_rejected_entries(index: ToolIndex) -> None:
    hits = index.search("file", 5, allowed=lambda e: e.name != "files__read_file")
    assert [h.entry.name for h in hits] == ["files__write_file"]


def test_filter_digs_past_many_rejected_candidates() -> None:
    many = ToolIndex([entry(f"t{i}", "common words here") for i in range(300)])
    hits = many.search("common", 2, allowed=lambda e: e.name in {"t7", "t250"})
    assert {h.entry.name for h in hits} == {"t7", "t250"}


def test_ties_break_by_name_deterministically() -> None:
    tied = ToolIndex([entry(name, "same words") for name in ("b_tool", "a_tool", "c_tool")])
    assert [h.entry.name for h in tied.search("same", 3)] == ["a_tool", "b_tool", "c_tool"]


def test_upsert_replaces_and_remove_forgets(index: ToolIndex) -> None:
    assert index.upsert([entry("files__read_file", "Read the contents of a file", tool="read_file")]) == 0
    assert index.upsert([entry("files__read_file", "Fetch a page", tool="read_file")]) == 1
    assert "files__read_file" not in [h.entry.name for h in index.search("contents", 5)]
    assert index.search("page", 1)[0].entry.name == "files__read_file"
    assert index.remove(["files__read_file", "unknown"]) == 1
    assert "files__read_file" not in index
    assert len(index) == 3
    assert [h.entry.name for h in index.search("read", 5)] == []
    index.upsert([entry("files__read_file", "Read the contents of a file", tool="read_file")])
    assert index.search("read file", 1)[0].entry.name == "files__read_file"


def test_incremental_updates_rank_like_a_fresh_build(index: ToolIndex) -> None:
    index.upsert([entry("mail__send", "Send an email message")])
    index.remove(["weather__forecast"])
    fresh = ToolIndex(index.entries())
    for query in ("send email", "read file", "list servers", "file message"):
        updated, rebuilt = index.search(query, 5), fresh.search(query, 5)
        assert [h.entry.name for h in updated] == [h.entry.name for h in rebuilt]
        # Field-length averages are kept between renormalisations: scores may move a little, not much.
        assert all(abs(a.score - b.score) <= 0.1 * b.score for a, b in zip(updated, rebuilt, strict=True))


def test_a_requests_sentences_are_scored_as_each_would_be_alone(index: ToolIndex) -> None:
    """The hybrid's word scores (one row per text, from shared per-term rows) are each text's own BM25F
    scores, and follow catalog changes (the per-term arrays are rebuilt)."""
    texts = ["read a file. Then get the weather forecast for my city.", "read a file.", "weather forecast city"]
    for _ in range(2):
        rows = index._lexical(texts)
        for text, row in zip(texts, rows, strict=True):
            alone = index._scores(index._query_terms(text), None)
            assert {doc: pytest.approx(score) for doc, score in alone.items()} == {
                doc: float(row[doc]) for doc in row.nonzero()[0]
            }
        index.upsert([entry("weather__alerts", "Severe weather alerts for a city", tool="alerts")])
    assert index._lexical(["weather"])[0][index._ids["weather__alerts"]] > 0


def test_ten_thousand_tools_build_and_search_fast() -> None:
    verbs = ["get", "list", "create", "delete", "update", "search", "read", "write", "send", "run"]
    nouns = [
        "file",
        "issue",
        "user",
        "message",
        "channel",
        "repo",
        "ticket",
        "page",
        "invoice",
        "image",
        "calendar",
        "event",
        "table",
        "query",
        "document",
    ]
    tools = [
        entry(
            f"server{i % 500}__{verbs[i % 10]}_{nouns[(i // 10) % 15]}",
            f"{verbs[i % 10].title()} a {nouns[(i // 10) % 15]} in service {i % 500}",
            input_schema={"type": "object", "properties": {"id": {}, nouns[i % 15]: {}}},
        )
        for i in range(10_000)
    ]
    # CPU time, not wall time: a busy machine must not fail this. It guards against a pathological
    # slowdown; bench/discovery_quality.py reports the real figures.
    started = time.thread_time()
    big = ToolIndex(tools)
    build = time.thread_time() - started
    timings = []
    for query in ("list files", "create an issue", "send a message to a channel", "search documents", "server42"):
        started = time.thread_time()
        big.search(query, 10)
        timings.append(time.thread_time() - started)
    assert build < 6.0, build
    assert max(timings) < 0.05, timings


def test_early_stopping_keeps_the_callers_best_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    from jarvis.aggregator.discovery import index as index_module

    words = ["alpha", "beta", "gamma", "delta", "omega"]
    many = ToolIndex([entry(f"tool_{i}", " ".join(words[: 1 + i % 5]) + f" w{i % 50}") for i in range(6000)])
    query = "alpha beta gamma delta omega w7 w13"

    def visible(e: ToolEntry) -> bool:
        return int(e.name.split("_")[1]) % 97 == 0

    fast = [h.entry.name for h in many.search(query, 10, visible)]
    monkeypatch.setattr(index_module, "FULL_POSTINGS", 10**9)  # an exhaustive search
    exact = [h.entry.name for h in many.search(query, 10, visible)]
    assert len(fast) == 10
    assert fast == exact


def test_a_request_of_several_sentences_is_split_into_them() -> None:
    request = "Find a route from Beijing to Chengdu for my car. Then list the charging stations on it! Thanks a lot."
    # "Thanks a lot." says too little to rank tools by: it joins the sentence before it.
    assert clauses(request) == [
        "Find a route from Beijing to Chengdu for my car.",
        "Then list the charging stations on it! Thanks a lot.",
    ]
    # A file name or a domain is not the end of a sentence; one sentence stays whole.
    assert clauses("Save the report to /root/pdf/report.pdf and mail it to www.example.com today") == [
        "Save the report to /root/pdf/report.pdf and mail it to www.example.com today"
    ]
    assert clauses("  ") == [""]
    many = " ".join(f"Look up the weather in city number {i}." for i in range(20))
    assert len(clauses(many)) == MAX_CLAUSES
    assert " ".join(clauses(many)) == many
