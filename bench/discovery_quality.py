"""How well and how fast `tool_find` ranks tools: Jarvis's lexical, dense and hybrid search beside
plain BM25 and plain TF-IDF, measured in the same run.

Prints figures; asserts nothing. Run: `.venv/bin/python bench/discovery_quality.py [--quick]`.

Quality, on real catalogs and real queries that nobody here wrote (never built from indexed text):

* MetaTool (`../shared/datasets/metatool`): 199 tools (`plugin_des.json`, name and description only)
  and the 10,339 dev queries of `queries_dev.csv`, each naming its one correct tool.
* LiveMCPBench: the 527 tools of 70 servers (`../shared/datasets/livemcpbench/tools.json`, with their
  schemas) and the benchmark's 94 task questions with the tools its annotators used
  (`bench/data/livemcpbench_tasks.json`, ~2.7 tools each; extracted from the benchmark's annotation
  file, see its header). A task's recall@k is the share of its tools among the first k results (a tool
  is matched by the name its server gives it); MRR is 1/rank of the first of them.

Every method gets the same tools. Plain TF-IDF is spec 003's baseline (lower-cased `\\w+` words of
name and description, tf-idf vectors, cosine); plain BM25 is Okapi BM25 (k1=1.5, b=0.75) on the same
words. Jarvis's index also reads what its catalog entries carry (parameter names and descriptions,
enum values, the server's description and category). Dense is all-MiniLM-L6-v2 (int8 ONNX) alone;
hybrid is what tool_find runs (index.py's weights). MRR is over the first 10.

Speed, with 10,000 tools made by replicating the real ones under varied server names (the server
name is part of what is embedded, so all 10,000 texts are distinct and every one is embedded):
lexical build time; embedding all of them from an empty vector store (off the request path, one
thread); a restart over the same catalog (vectors read back, nothing embedded); cold start (a new
process importing Jarvis and loading the model); `ToolIndex.search` p50/p99 for 1,344 distinct
queries with each query embedded (no query cache), lexical and hybrid; resident memory added.
Wall-clock and CPU time are both shown: on a shared machine the first includes waiting for a core.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("aggregator/src", "libs/common/src", "protos/src", "services/registry/src")
for src in SOURCES:
    sys.path.insert(0, str(REPO / src))

import numpy as np  # noqa: E402

from jarvis.aggregator.discovery.access import sees_everything, visible_to  # noqa: E402
from jarvis.aggregator.discovery.dense import DenseIndex, default_cache  # noqa: E402
from jarvis.aggregator.discovery.entry import ToolEntry  # noqa: E402
from jarvis.aggregator.discovery.index import ToolIndex  # noqa: E402
from jarvis.aggregator.downstream.naming import namespaced  # noqa: E402
from jarvis.aggregator.principal import LOCAL_ADMIN, Principal  # noqa: E402
from jarvis.registry.domain.names import slugify  # noqa: E402

DATASETS = REPO.parent / "shared" / "datasets"
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
        return ToolEntry(name=name or self.name, description=self.description, source=server or self.server,
                         kind="server", tool=tool, category=self.category, input_schema=self.schema,
                         context=self.context)


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
                docs.append(Doc(namespaced(slug, tool["name"]), tool.get("description") or "", schema, slug,
                                server.get("description", ""), server.get("category", "")))
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


def ready_dense(entries: list[ToolEntry], cache: Path) -> DenseIndex:
    dense = DenseIndex(cache)
    dense.upsert(entries)
    dense.start()
    if not dense.wait_ready(3600):
        sys.exit(f"the embedding model is unavailable: {dense.status().detail}")
    return dense


def dense_only(dense: DenseIndex) -> Search:
    def search(query: str) -> list[str]:
        scores = dense.scores(query)
        assert scores is not None
        return [scores.names[i] for i in np.argsort(-scores.values)[:10]]
    return search


def quality(label: str, docs: list[Doc], queries: Queries | MultiQueries, cache: Path) -> dict[str, float]:
    entries = [d.entry() for d in docs]
    tool_of = {e.name: e.tool for e in entries}
    dense = ready_dense(entries, cache)
    lexical, hybrid = ToolIndex(entries), ToolIndex(entries, dense=dense)
    methods: dict[str, Search] = {
        "jarvis hybrid": lambda q: [h.entry.name for h in hybrid.search(q, 10)],
        "jarvis lexical (BM25F)": lambda q: [h.entry.name for h in lexical.search(q, 10)],
        "jarvis dense (MiniLM)": dense_only(dense),
        "plain BM25": PlainBm25(docs).search,
        "plain TF-IDF": PlainTfIdf(docs).search,
    }
    results = {name: evaluate(search, queries, tool_of) for name, search in methods.items()}
    dense.stop()
    print(f"\n{label}: {len(docs)} tools, {len(queries)} queries")
    print(f"  {'method':<24} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6}")
    for name, r in results.items():
        print(f"  {name:<24} {r['r@1']:>6.3f} {r['r@5']:>6.3f} {r['r@10']:>6.3f} {r['mrr']:>6.3f}")
    base = results["plain TF-IDF"]["r@5"]
    print(f"  recall@5 of jarvis hybrid / plain TF-IDF: {results['jarvis hybrid']['r@5'] / base:.2f}x")
    return results["jarvis hybrid"]


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


def resident_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


COLD_START = """
import sys, time
t, c = time.perf_counter(), time.process_time()
sys.path[:0] = {paths!r}
from pathlib import Path
from jarvis.aggregator.discovery.embedding import Embedder
Embedder(Path({cache!r})).embed(["warm up"])
print(f"{{time.perf_counter() - t:.2f}} {{time.process_time() - c:.2f}}")
"""


def cold_start(cache: Path) -> str:
    paths = [str(REPO / src) for src in SOURCES]
    out = subprocess.run([sys.executable, "-c", COLD_START.format(paths=paths, cache=str(cache))],
                         capture_output=True, text=True, check=True).stdout.split()
    return f"wall {out[0]} s, CPU {out[1]} s"


def timed(work: Callable[[], object]) -> tuple[float, float]:
    started, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - started, time.process_time() - cpu


def speed(docs: list[Doc], queries: list[str], size: int, cache: Path) -> None:
    entries = synthetic(docs, size)
    print(f"\nSpeed: {size} tools")
    print(f"  cold start (new process: imports, model load, first embedding): {cold_start(cache)}")
    before = resident_mb()
    wall, cpu = timed(lambda: ToolIndex(entries))
    print(f"  lexical index build: wall {wall:.2f} s, CPU {cpu:.2f} s")
    store = Path(tempfile.mkdtemp(prefix="jarvis-bench-vectors-"))
    (store / Path(next(iter(cache.glob("*.onnx"))).name)).symlink_to(next(iter(cache.glob("*.onnx"))))
    dense: DenseIndex | None = None

    def embed_all() -> None:
        nonlocal dense
        dense = ready_dense(entries, store)
    wall, cpu = timed(embed_all)
    print(f"  embedding {size} new tools (empty vector store): wall {wall:.1f} s, CPU {cpu:.1f} s")
    assert dense is not None
    dense.stop()
    wall, cpu = timed(lambda: ready_dense(entries, store).stop())
    print(f"  restart over the same catalog (vectors read back, none embedded): wall {wall:.2f} s, CPU {cpu:.2f} s")
    dense = ready_dense(entries, store)
    hybrid, lexical = ToolIndex(entries, dense=dense), ToolIndex(entries)
    print(f"  resident memory added (both indexes, the model, 10,000 vectors): {resident_mb() - before:.0f} MB")
    scoped = Principal(token_id="t", name="scoped", scopes=("servers:bing-cn-mcp",))
    for label, index in (("lexical", lexical), ("hybrid (query embedded)", hybrid)):
        for who, principal in (("local admin", LOCAL_ADMIN), ("servers:bing-cn-mcp token", scoped)):
            allowed = None if sees_everything(principal) else visible_to(principal, lambda _name: None)
            for q in queries[:50]:
                index.search("warm " + q, 10, allowed)
            dense._queries.clear()  # every timed query is embedded
            wall_s, cpu_s = [], []
            for q in queries:
                w0, c0 = time.perf_counter(), time.thread_time()
                index.search(q, 10, allowed)
                cpu_s.append(time.thread_time() - c0)
                wall_s.append(time.perf_counter() - w0)
            print(f"  search {label:<24} as {who:<26} wall {percentiles(wall_s)}; CPU {percentiles(cpu_s)}")
    dense.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 MetaTool queries instead of all")
    parser.add_argument("--size", type=int, default=10_000, help="tools in the speed test")
    parser.add_argument("--cache", type=Path, default=default_cache(), help="model graph and vector cache")
    args = parser.parse_args()
    meta_docs, meta_queries = metatool()
    live_docs, live_queries = livemcpbench_tasks()
    rng = random.Random(7)
    if args.quick:
        meta_queries = rng.sample(meta_queries, 2000)
    quality("MetaTool dev", meta_docs, meta_queries, args.cache)
    quality("LiveMCPBench task questions", live_docs, live_queries, args.cache)
    timing = [q[:500] for q, _ in rng.sample(meta_queries, 1250)] + [q[:500] for q, _ in live_queries]
    speed(meta_docs + live_docs, timing, args.size, args.cache)


if __name__ == "__main__":
    main()
