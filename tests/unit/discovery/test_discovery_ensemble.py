"""Dense retrieval's second model: WordLlama's static vectors read from its installed files, mixed with
MiniLM's into one vector per text, and what the mix is worth on real queries nobody here wrote."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from jarvis.aggregator.discovery import static
from jarvis.aggregator.discovery.dense import DenseIndex
from jarvis.aggregator.discovery.embedding import Embedder, ModelUnavailable
from jarvis.aggregator.discovery.ensemble import STATIC_SHARE, Ensemble, TextEncoder
from jarvis.aggregator.discovery.entry import ToolEntry
from jarvis.aggregator.discovery.index import ToolIndex
from jarvis.aggregator.discovery.static import StaticEmbedder
from tests.support.retrieval_data import MultiQueries, Queries, evaluate, livemcpbench_tasks, metatool

TEXTS = ["show the logs of a lambda function", "read an AWS Lambda's log output", "bake a chocolate cake"]


@pytest.fixture(scope="module")
def words() -> StaticEmbedder:
    return StaticEmbedder()


def test_static_vectors_come_from_the_installed_files_without_importing_the_package(words: StaticEmbedder) -> None:
    # Importing wordllama would configure the root logger (its __init__ calls logging.basicConfig).
    assert "wordllama" not in sys.modules
    vectors = words.embed([*TEXTS, ""])
    assert vectors.shape == (4, 128)
    assert np.allclose(np.linalg.norm(vectors[:3], axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    assert not vectors[3].any()  # no token: no direction, so no tool is like it
    assert words.embed([]).shape == (0, 128)
    # Every token is read: the end of a long text still moves its vector.
    long = "word " * 400
    assert float(words.embed([long + "calendar"])[0] @ words.embed([long + "volcano"])[0]) < 1.0


def test_without_wordllama_the_ensemble_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(static, "PACKAGE", "wordllama_not_installed")
    with pytest.raises(ModelUnavailable, match="wordllama"):
        StaticEmbedder()


def test_an_ensemble_dot_product_mixes_the_two_models_cosines(embedder: Embedder, words: StaticEmbedder) -> None:
    both = Ensemble(embedder, words)
    assert both.dimension == 384 + 128
    # Vectors stored from MiniLM alone (or another share) are never read back as this model's.
    assert both.model_id != embedder.model_id
    assert str(STATIC_SHARE) in both.model_id
    mixed = both.embed(TEXTS)
    contextual, plain = embedder.embed(TEXTS), words.embed(TEXTS)
    expected = (1 - STATIC_SHARE) * contextual @ contextual.T + STATIC_SHARE * plain @ plain.T
    assert np.allclose(mixed @ mixed.T, expected, atol=1e-5)
    # MiniLM's token cap still applies to its half; WordLlama reads the whole text.
    capped = both.embed([TEXTS[0] + " and bake a cake"], max_tokens=8)[0]
    assert np.allclose(capped[:384], np.sqrt(1 - STATIC_SHARE) * embedder.embed([TEXTS[0]], max_tokens=8)[0])


@contextmanager
def _hybrid(tmp_path: Path, model: TextEncoder, entries: list[ToolEntry]) -> Iterator[ToolIndex]:
    """A hybrid index over `entries` whose vectors are all ready."""
    dense = DenseIndex(tmp_path, loader=lambda: model, lowest_priority=False)
    try:
        index = ToolIndex(entries, dense=dense)
        dense.start()
        assert dense.wait_ready(300)
        yield index
    finally:
        dense.stop()


def test_the_mix_finds_more_right_tools_than_minilm_alone(
    tmp_path: Path, embedder: Embedder, words: StaticEmbedder
) -> None:
    """Hybrid recall@5 on every 5th MetaTool dev query (2,068) and LiveMCPBench's 94 task questions, with
    MiniLM alone and with the ensemble tool_find runs (all of MetaTool: 0.800 and 0.812, LiveMCPBench 0.450
    and 0.477)."""
    docs, queries = metatool()
    live_docs, tasks = livemcpbench_tasks()
    sets: list[tuple[list[ToolEntry], Queries | MultiQueries]] = [
        ([d.entry() for d in docs], queries[::5]),
        ([d.entry() for d in live_docs], tasks),
    ]
    recall: dict[str, list[float]] = {}
    for label, model in (("minilm", embedder), ("ensemble", Ensemble(embedder, words))):
        for n, (entries, asked) in enumerate(sets):
            with _hybrid(tmp_path / f"{label}{n}", model, entries) as index:
                tool_of = {e.name: e.tool for e in entries}
                search = lambda q, index=index: [h.entry.name for h in index.search(q, 10)]  # noqa: E731
                recall.setdefault(label, []).append(evaluate(search, asked, tool_of)["r@5"])
    metatool_gain, live_gain = (b - a for a, b in zip(recall["minilm"], recall["ensemble"], strict=True))
    assert metatool_gain > 0.005, recall
    assert live_gain > 0.01, recall
    assert recall["ensemble"][1] >= 0.45, recall
