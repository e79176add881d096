"""Tuning grid for multi-intent queries (docs/decisions/0014-discovery-hybrid-retrieval.md): split into clauses, score
each, merge per tool.

Prints recall@5 on MetaTool dev (a sample) and the 94 LiveMCPBench task questions for every rule and merge
tried. Tool vectors come from the vector store given (the benchmark's), query vectors are embedded alone.
"""

from __future__ import annotations

import argparse
import functools
import random
import re
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for src in ("aggregator/src", "libs/common/src", "protos/src", "services/registry/src"):
    sys.path.insert(0, str(REPO / src))
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402

from jarvis.aggregator.discovery import dense as dense_module  # noqa: E402
from jarvis.aggregator.discovery.dense import DenseIndex, DenseScores  # noqa: E402
from jarvis.aggregator.discovery.embedding import Vectors  # noqa: E402
from jarvis.aggregator.discovery.index import ToolIndex  # noqa: E402
from jarvis.aggregator.discovery.text import analyze  # noqa: E402
from tests.support.retrieval_data import (  # noqa: E402
    Doc,
    MultiQueries,
    Queries,
    evaluate,
    livemcpbench_tasks,
    metatool,
)

Fused = npt.NDArray[np.float64]

RULES = {
    "sentences": [r"(?<=[.!?])\s+"],
    "+;then": [r"(?<=[.!?])\s+", r"\s*;\s*", r",?\s+(?:and\s+)?then\s+"],
    "+and": [r"(?<=[.!?])\s+", r"\s*;\s*", r",?\s+(?:and\s+)?then\s+", r",?\s+and\s+"],
    "+commas": [r"(?<=[.!?])\s+", r"\s*;\s*", r",?\s+(?:and\s+)?then\s+", r",?\s+and\s+", r",\s+"],
}


MIN_TERMS = (2, 3, 4)
# (merge, weight): "whole" is the whole query's fused score, "approxwhole" the same with its dense side from the
# sum of its clauses' vectors (no embedding of the whole), "max" the best clause's fused score per tool.
GRID = (
    ("max", 1.0),
    ("clausemax", 1.0),
    ("whole+mean", 1.0),
    ("whole+mean", 2.0),
    ("interleave", 1.0),
    ("interleave-clauses", 1.0),
    ("whole+max", 0.5),
    ("whole+max", 0.75),
    ("whole+max", 1.0),
    ("whole+max", 1.5),
    ("approxwhole+max", 0.5),
    ("approxwhole+max", 1.0),
    ("approxwhole+max", 1.5),
    ("approxmax", 1.0),
)


def clauses(query: str, rule: list[str], min_terms: int) -> list[str]:
    parts = [query]
    for pattern in rule:
        parts = [p for part in parts for p in re.split(pattern, part) if p.strip()]
    merged: list[str] = []
    for part in parts:
        if merged and (len(analyze(part)) < min_terms or len(analyze(merged[-1])) < min_terms):
            merged[-1] = merged[-1] + " " + part
        else:
            merged.append(part)
    return merged


class Tuning:
    """One catalog's index and its queries' fused scores, whole and per clause."""

    def __init__(self, docs: list[Doc], queries: Queries | MultiQueries, cache: Path) -> None:
        entries = [d.entry() for d in docs]
        self.tool_of = {e.name: e.tool for e in entries}
        self.queries = queries
        dense_module.QUERY_CACHE = 100_000
        self.dense = DenseIndex(cache, lowest_priority=False)
        self.dense.upsert(entries)
        self.dense.start()
        assert self.dense.wait_ready(3600)
        assert self.dense._model is not None
        self.model = self.dense._model
        self.index = ToolIndex(entries, dense=self.dense)
        self.names = {doc: record.entry.name for doc, record in self.index._docs.items()}
        self.whole = {q: self.fused(q) for q, _ in queries}

    def fused(self, text: str, vector: Vectors | None = None) -> Fused:
        scores = self.dense.scores(text)
        assert scores is not None
        if vector is not None:
            scores = DenseScores(scores.names, scores.rows, self.dense_matrix() @ vector)
        values = scores.values.reshape(len(scores.names), -1)
        fused = self.index._fuse(self.index._lexical([text]), DenseScores(scores.names, scores.rows, values))
        row: Fused = fused[0]
        return row

    def dense_matrix(self) -> Vectors:
        table = self.dense._matrix
        assert table is not None
        return table.values

    def top(self, fused: Fused) -> list[str]:
        order = np.argsort(-fused, kind="stable")[:10]
        return [self.names[int(d)] for d in order if np.isfinite(fused[d])]

    def top_whole(self, query: str) -> list[str]:
        return self.top(self.whole[query])

    def recall(self, search: Callable[[str], list[str]]) -> float:
        return evaluate(search, self.queries, self.tool_of)["r@5"]

    def grid(self, rule: list[str], min_terms: int) -> str:
        split = {q: clauses(q, rule, min_terms) for q, _ in self.queries}
        per = {q: [self.fused(c) for c in cs] if len(cs) > 1 else [] for q, cs in split.items()}
        # The whole query's dense side from its clauses' vectors (no second embedding): their sum.
        approx = {
            q: self.fused(q, np.sum([self.dense._query_vector(self.model, c) for c in cs], axis=0))
            for q, cs in split.items()
            if len(cs) > 1
        }

        def merged(q: str, how: str, w: float) -> list[str]:
            whole, parts = self.whole[q], per[q]
            if how.startswith("approx"):
                how, whole = how.removeprefix("approx"), approx.get(q, whole)
            if not parts:
                return self.top(whole)
            stack = np.stack(parts)
            stack = np.where(np.isfinite(stack), stack, -1.0)
            w0 = np.where(np.isfinite(whole), whole, -1.0)
            merges = {
                "max": lambda: np.maximum(w0, stack.max(0)),
                "clausemax": lambda: stack.max(0),
                "whole+max": lambda: w0 + w * stack.max(0),
                "whole+mean": lambda: w0 + w * stack.mean(0),
            }
            if how in merges:
                return self.top(merges[how]())
            lists = [self.top(p) for p in parts]
            return interleave([self.top(whole), *lists] if how == "interleave" else lists)

        results = [
            f"{how}{f'({w})' if 'whole+' in how else ''} {self.recall(functools.partial(merged, how=how, w=w)):.3f}"
            for how, w in GRID
        ]
        multi = sum(len(c) > 1 for c in split.values())
        return f"split {multi:>4}: " + ", ".join(results)


def interleave(lists: list[list[str]]) -> list[str]:
    out: list[str] = []
    for rank in range(10):
        for ranked in lists:
            if rank < len(ranked) and ranked[rank] not in out:
                out.append(ranked[rank])
    return out[:10]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", type=Path, required=True, help="the vector store (the benchmark's)")
    parser.add_argument("--meta", type=int, default=2000, help="MetaTool dev queries sampled (seed 7)")
    args = parser.parse_args()
    meta_docs, meta_queries = metatool()
    live_docs, live_queries = livemcpbench_tasks()
    meta_sample = random.Random(7).sample(meta_queries, args.meta)
    for label, docs, queries in (("LiveMCPBench", live_docs, live_queries), ("MetaTool", meta_docs, meta_sample)):
        tuning = Tuning(docs, queries, args.cache)
        print(f"\n{label}: whole query {tuning.recall(tuning.top_whole):.3f}", flush=True)
        for rule_name, rule in RULES.items():
            for min_terms in MIN_TERMS:
                print(f"  {rule_name:<9} min_terms {min_terms} {tuning.grid(rule, min_terms)}", flush=True)
        tuning.dense.stop()


if __name__ == "__main__":
    main()
