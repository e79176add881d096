"""Real tool-retrieval data and plain baselines, shared by the discovery tests and benchmark.

MetaTool (`../shared/datasets/metatool`) and LiveMCPBench (`../shared/datasets/livemcpbench`, with the
benchmark's task questions in `bench/data/livemcpbench_tasks.json`): see bench/discovery_quality.py.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jarvis.aggregator.discovery.entry import ToolEntry
from jarvis.aggregator.downstream.hosting.naming import namespaced
from jarvis.registry.domain.names import slugify

REPO = Path(__file__).resolve().parents[2]
# Beside the repository (../shared/datasets), or where JARVIS_DATASETS says (a worktree kept elsewhere).
DATASETS = Path(os.environ.get("JARVIS_DATASETS") or REPO.parent / "shared" / "datasets")
TASKS = REPO / "bench" / "data" / "livemcpbench_tasks.json"
_PLAIN = re.compile(r"\w+")


@dataclass(frozen=True)
class Doc:
    name: str
    description: str
    schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    server: str = ""
    context: str = ""
    category: str = ""

    def entry(self, name: str | None = None, server: str | None = None) -> ToolEntry:
        tool = self.name.split("__", 1)[-1]
        return ToolEntry(
            name=name or self.name,
            description=self.description,
            source=server or self.server,
            kind="server",
            tool=tool,
            category=self.category,
            input_schema=self.schema,
            context=self.context,
        )


Queries = list[tuple[str, str]]
# A question and the tools (by the name their server gives them) that answer it.
MultiQueries = list[tuple[str, list[str]]]


def metatool() -> tuple[list[Doc], Queries]:
    tools = json.loads((DATASETS / "metatool/plugin_des.json").read_text())
    with (DATASETS / "metatool/queries_dev.csv").open(newline="") as f:
        queries = [(row["Query"], row["Tool"]) for row in csv.DictReader(f)]
    return [Doc(name, description) for name, description in tools.items()], queries


def livemcpbench_catalog() -> list[Doc]:
    """The 527 tools of LiveMCPBench's 70 servers, named `<server>__<tool>` as Jarvis names downstream tools."""
    docs = []
    for server in json.loads((DATASETS / "livemcpbench/tools.json").read_text()):
        for key, group in server["tools"].items():
            slug = slugify(key) or key
            for tool in group["tools"]:
                schema = {**(tool.get("inputSchema") or {}), "type": "object"}
                docs.append(
                    Doc(
                        namespaced(slug, tool["name"]),
                        tool.get("description") or "",
                        schema,
                        slug,
                        server.get("description", ""),
                        server.get("category", ""),
                    )
                )
    return docs


def livemcpbench_tasks() -> tuple[list[Doc], MultiQueries]:
    """The catalog and LiveMCPBench's 94 task questions, each with the tools its annotators used."""
    tasks = json.loads(TASKS.read_text())["tasks"]
    return livemcpbench_catalog(), [(t["question"], list(t["tools"])) for t in tasks]


class PlainTfIdf:
    """Spec 003's baseline: tf-idf vectors of name and description words, ranked by cosine."""

    def __init__(self, docs: list[Doc]) -> None:
        self.names = [d.name for d in docs]
        counts = [Counter(_PLAIN.findall(f"{d.name} {d.description}".lower())) for d in docs]
        df = Counter(t for c in counts for t in c)
        self.idf = {t: math.log((1 + len(docs)) / (1 + n)) + 1 for t, n in df.items()}
        self.vectors = []
        for c in counts:
            v = {t: n * self.idf[t] for t, n in c.items()}
            norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
            self.vectors.append({t: x / norm for t, x in v.items()})

    def search(self, query: str, k: int = 10) -> list[str]:
        q = {t: n * self.idf[t] for t, n in Counter(_PLAIN.findall(query.lower())).items() if t in self.idf}
        scored = [(sum(v.get(t, 0.0) * w for t, w in q.items()), i) for i, v in enumerate(self.vectors)]
        return [self.names[i] for s, i in sorted(scored, key=lambda x: -x[0])[:k] if s > 0]


class PlainBm25:
    """Okapi BM25 over the same words, one field."""

    def __init__(self, docs: list[Doc], k1: float = 1.5, b: float = 0.75) -> None:
        self.names = [d.name for d in docs]
        self.counts = [Counter(_PLAIN.findall(f"{d.name} {d.description}".lower())) for d in docs]
        self.lengths = [sum(c.values()) for c in self.counts]
        self.average = sum(self.lengths) / len(docs)
        df = Counter(t for c in self.counts for t in c)
        self.idf = {t: math.log(1 + (len(docs) - n + 0.5) / (n + 0.5)) for t, n in df.items()}
        self.k1, self.b = k1, b

    def search(self, query: str, k: int = 10) -> list[str]:
        terms = [t for t in set(_PLAIN.findall(query.lower())) if t in self.idf]
        scored = []
        for i, c in enumerate(self.counts):
            norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / self.average)
            s = sum(self.idf[t] * c[t] * (self.k1 + 1) / (c[t] + norm) for t in terms if t in c)
            scored.append((s, i))
        return [self.names[i] for s, i in sorted(scored, key=lambda x: -x[0])[:k] if s > 0]


Search = Callable[[str], list[str]]


def evaluate(search: Search, queries: Queries | MultiQueries, tool_of: dict[str, str]) -> dict[str, float]:
    """Recall@1/5/10 and MRR. A single gold is a catalog name; a list of golds are tools' own names."""
    r1 = r5 = r10 = mrr = 0.0
    for query, gold in queries:
        found = search(query)
        if isinstance(gold, str):
            wanted, seen = {gold}, found
        else:
            wanted, seen = set(gold), [tool_of[name] for name in found]
        ranks = [i + 1 for i, name in enumerate(seen) if name in wanted]
        r1 += len(wanted & set(seen[:1])) / len(wanted)
        r5 += len(wanted & set(seen[:5])) / len(wanted)
        r10 += len(wanted & set(seen[:10])) / len(wanted)
        mrr += 1 / ranks[0] if ranks else 0.0
    n = len(queries)
    return {"r@1": r1 / n, "r@5": r5 / n, "r@10": r10 / n, "mrr": mrr / n}
