"""How well and how fast `tool_find` ranks tools: Jarvis's index against plain BM25 and plain TF-IDF.

Prints figures; asserts nothing. Run: `.venv/bin/python bench/discovery_quality.py [--quick]`.

Quality, on the real catalogs in `../shared/datasets/` (see its README):

* MetaTool: 199 tools (`plugin_des.json`, name and description only) and the 10,339 queries of
  `queries_dev.csv`, each naming its one correct tool.
* LiveMCPBench: 527 tools of 70 servers (`tools.json`). It ships no queries, so they are derived,
  one per tool, from text no index sees: a tool's query is the concatenation of its parameters'
  descriptions (tools whose parameters have fewer than three words of description are left out),
  and those descriptions are removed from the schemas every index receives. A query therefore
  shares no indexed text with its tool except by the words its author chose twice. It is not a
  paraphrase of the tool's description and is not written by us. It rewards indexes that use
  parameter names (as Jarvis's does, and as agents naming what they have would): read it as "find
  the tool from what you would pass it", not as a natural-language benchmark.

Every method gets the same documents: the tool's catalog name (`<server>__<tool>` for LiveMCPBench,
as Jarvis names downstream tools) and description. Jarvis's index also reads what its catalog
entries carry: the input schema (parameter names, enum values), the server's description and
category. Plain TF-IDF is spec 003's baseline (lower-cased `\\w+` words of name and description,
tf-idf vectors, cosine). Plain BM25 is Okapi BM25 (k1=1.5, b=0.75) on the same words.
Recall@k is the share of queries whose tool is among the first k; MRR is over the first 10.

Speed: 10,000 tools made by replicating the 726 real ones under varied server names (so every
description occurs about 14 times: longer postings than a real catalog of distinct tools, the harder
case). Build time is for a fresh index of all of them; search time is `ToolIndex.search` with the
caller filter `tool_find` applies, for 1,500 MetaTool and LiveMCPBench queries (cut to tool_find's
500-character limit), after one warm-up pass. Wall-clock and per-query CPU time are both shown: on a
shared machine the first includes time spent waiting for a core.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
for src in ("aggregator/src", "libs/common/src", "protos/src", "services/registry/src"):
    sys.path.insert(0, str(REPO / src))

from jarvis.aggregator.discovery.access import sees_everything, visible_to  # noqa: E402
from jarvis.aggregator.discovery.entry import ToolEntry  # noqa: E402
from jarvis.aggregator.discovery.index import ToolIndex  # noqa: E402
from jarvis.aggregator.downstream.naming import namespaced  # noqa: E402
from jarvis.aggregator.principal import LOCAL_ADMIN, Principal  # noqa: E402
from jarvis.registry.domain.names import slugify  # noqa: E402

DATASETS = REPO.parent / "shared" / "datasets"
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
        return ToolEntry(name=name or self.name, description=self.description, source=server or self.server,
                         kind="server", tool=tool, category=self.category, input_schema=self.schema,
                         context=self.context)


Queries = list[tuple[str, str]]


def metatool() -> tuple[list[Doc], Queries]:
    tools = json.loads((DATASETS / "metatool/plugin_des.json").read_text())
    with (DATASETS / "metatool/queries_dev.csv").open(newline="") as f:
        queries = [(row["Query"], row["Tool"]) for row in csv.DictReader(f)]
    return [Doc(name, description) for name, description in tools.items()], queries


def livemcpbench() -> tuple[list[Doc], Queries]:
    docs, queries = [], []
    for server in json.loads((DATASETS / "livemcpbench/tools.json").read_text()):
        for key, group in server["tools"].items():
            slug = slugify(key) or key
            for tool in group["tools"]:
                schema = tool.get("inputSchema") or {}
                properties = {k: v for k, v in (schema.get("properties") or {}).items() if isinstance(v, dict)}
                held_out = " ".join(str(p["description"]) for p in properties.values() if p.get("description"))
                stripped = {k: {kk: vv for kk, vv in v.items() if kk != "description"} for k, v in properties.items()}
                name = namespaced(slug, tool["name"])
                docs.append(Doc(name, tool.get("description") or "", {**schema, "type": "object",
                                                                        "properties": stripped},
                                slug, server.get("description", ""), server.get("category", "")))
                if len(_PLAIN.findall(held_out)) >= 3:
                    queries.append((held_out, name))
    return docs, queries


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


def evaluate(search: Callable[[str], list[str]], queries: Queries) -> dict[str, float]:
    ranks = []
    for query, gold in queries:
        found = search(query)
        ranks.append(found.index(gold) + 1 if gold in found else 0)
    n = len(ranks)
    return {"r@1": sum(r == 1 for r in ranks) / n, "r@5": sum(0 < r <= 5 for r in ranks) / n,
            "r@10": sum(0 < r <= 10 for r in ranks) / n, "mrr": sum(1 / r for r in ranks if r) / n}


def quality(label: str, docs: list[Doc], queries: Queries) -> None:
    jarvis = ToolIndex(d.entry() for d in docs)
    methods: dict[str, Callable[[str], list[str]]] = {
        "jarvis (BM25F)": lambda q: [h.entry.name for h in jarvis.search(q, 10)],
        "plain BM25": PlainBm25(docs).search,
        "plain TF-IDF": PlainTfIdf(docs).search,
    }
    results = {name: evaluate(search, queries) for name, search in methods.items()}
    print(f"\n{label}: {len(docs)} tools, {len(queries)} queries")
    print(f"  {'method':<16} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6}")
    for name, r in results.items():
        print(f"  {name:<16} {r['r@1']:>6.3f} {r['r@5']:>6.3f} {r['r@10']:>6.3f} {r['mrr']:>6.3f}")
    base = results["plain TF-IDF"]["r@5"]
    print(f"  recall@5 of jarvis / plain TF-IDF: {results['jarvis (BM25F)']['r@5'] / base:.2f}x")


def synthetic(docs: list[Doc], size: int) -> list[ToolEntry]:
    """`size` tools: the real ones again and again, under varied server names."""
    variants = ["", "-cloud", "-local", "-pro", "-lite", "-team", "-v2", "-eu", "-us", "-beta", "-plus", "-self",
                "-edge", "-mini"]
    entries = []
    for i in range(size):
        doc = docs[i % len(docs)]
        copy = i // len(docs)
        server = f"{doc.server or 'plugins'}{variants[copy % len(variants)]}{copy // len(variants) or ''}"
        entries.append(doc.entry(namespaced(server, doc.name.split("__", 1)[-1]), server))
    return entries


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {statistics.median(ordered) * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms"


def speed(docs: list[Doc], queries: list[str], size: int) -> None:
    entries = synthetic(docs, size)
    started, cpu_started = time.perf_counter(), time.thread_time()
    index = ToolIndex(entries)
    build, build_cpu = time.perf_counter() - started, time.thread_time() - cpu_started
    print(f"\nSpeed: {len(index)} tools; index build wall {build:.2f} s, CPU {build_cpu:.2f} s")
    # One server of 10,000 tools: the filter rejects nearly every hit, the costliest case (exhaustive search).
    scoped = Principal(token_id="t", name="scoped", scopes=("servers:bing-cn-mcp",))
    for label, principal in (("local admin", LOCAL_ADMIN), ("servers:bing-cn-mcp token", scoped)):
        # As tool_find does: no filter for a caller that may call everything.
        allowed = None if sees_everything(principal) else visible_to(principal, lambda _name: None)
        for q in queries:
            index.search(q, 10, allowed)
        wall, cpu = [], []
        for q in queries:
            w0, c0 = time.perf_counter(), time.thread_time()
            index.search(q, 10, allowed)
            cpu.append(time.thread_time() - c0)
            wall.append(time.perf_counter() - w0)
        print(f"  tool_find search as {label:<26} wall {percentiles(wall)}; CPU {percentiles(cpu)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 MetaTool queries instead of all")
    parser.add_argument("--size", type=int, default=10_000, help="tools in the speed test")
    args = parser.parse_args()
    meta_docs, meta_queries = metatool()
    live_docs, live_queries = livemcpbench()
    rng = random.Random(7)
    if args.quick:
        meta_queries = rng.sample(meta_queries, 2000)
    quality("MetaTool", meta_docs, meta_queries)
    quality("LiveMCPBench (queries from held-out parameter descriptions)", live_docs, live_queries)
    timing = [q[:500] for q, _ in rng.sample(meta_queries, 1250)] + [q[:500] for q, _ in live_queries]
    speed(meta_docs + live_docs, timing, args.size)


if __name__ == "__main__":
    main()
