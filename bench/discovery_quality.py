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
enum values, the server's description and category). Dense is what tool_find's dense side runs alone:
all-MiniLM-L6-v2 (int8 ONNX) mixed with WordLlama's static vectors (ensemble.py), and beside it MiniLM
alone; hybrid is what tool_find runs (index.py's weights). MRR is over the first 10.

Speed, with 10,000 tools made by replicating the real ones under varied server names (the server
name is part of what is embedded, so all 10,000 texts are distinct and every one is embedded):
lexical build time; embedding all of them from an empty vector store (off the request path, on
`dense.WORKERS` threads); a restart over the same catalog (vectors read back, nothing embedded);
cold start (a new process importing Jarvis and loading the model); `ToolIndex.search` p50/p99 for
1,344 distinct queries, lexical, hybrid with each query embedded (no query cache), and hybrid with
the query's vector cached (everything but the model), for a caller who sees everything and for a
token scoped to one server; resident memory added. Wall-clock and CPU time are both shown: on a
shared machine the first includes waiting for a core. A search's CPU time is the whole process's (every
thread: the query pool that embeds a request's sentences side by side, ONNX Runtime's and BLAS's threads;
the background embedding is idle by then), so with parts embedded in parallel it can exceed the wall time.
The task questions' own percentiles are shown too: they are the long, multi-sentence tail. The first
line says what the machine's core does (a float32 matrix product, the model's time per query): the
model is most of the hybrid's time, and this shared machine's cores have run it 3x faster or slower
from one day to the next.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("aggregator/src", "libs/common/src", "protos/src", "services/registry/src")
sys.path.insert(0, str(REPO))
for src in SOURCES:
    sys.path.insert(0, str(REPO / src))

import numpy as np  # noqa: E402

from jarvis.aggregator.discovery import dense as dense_module  # noqa: E402
from jarvis.aggregator.discovery.access import sees_everything, visible_to  # noqa: E402
from jarvis.aggregator.discovery.dense import DenseIndex, Loader, default_cache  # noqa: E402
from jarvis.aggregator.discovery.embedding import Embedder  # noqa: E402
from jarvis.aggregator.discovery.entry import ToolEntry  # noqa: E402
from jarvis.aggregator.discovery.index import ToolIndex  # noqa: E402
from jarvis.aggregator.downstream.hosting.naming import namespaced  # noqa: E402
from jarvis.aggregator.tooling.principal import LOCAL_ADMIN, Principal  # noqa: E402
from tests.support.retrieval_data import (  # noqa: E402
    Doc,
    MultiQueries,
    PlainBm25,
    PlainTfIdf,
    Queries,
    Search,
    evaluate,
    livemcpbench_tasks,
    metatool,
)


def ready_dense(entries: list[ToolEntry], cache: Path, loader: Loader | None = None) -> DenseIndex:
    # At normal priority: Jarvis embeds at nice 19, which on a busy machine measures the machine.
    dense = DenseIndex(cache, loader, lowest_priority=False)
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
    dense_module.QUERY_CACHE = 10 * len(queries)  # room for every query and its sentences: no evictions
    dense, minilm = ready_dense(entries, cache), ready_dense(entries, cache, Embedder)
    lexical, hybrid = ToolIndex(entries), ToolIndex(entries, dense=dense)
    methods: dict[str, Search] = {
        "jarvis hybrid": lambda q: [h.entry.name for h in hybrid.search(q, 10)],
        "jarvis lexical (BM25F)": lambda q: [h.entry.name for h in lexical.search(q, 10)],
        "jarvis dense": dense_only(dense),
        "dense, MiniLM alone": dense_only(minilm),
        "plain BM25": PlainBm25(docs).search,
        "plain TF-IDF": PlainTfIdf(docs).search,
    }
    results = {name: evaluate(search, queries, tool_of) for name, search in methods.items()}
    dense.stop()
    minilm.stop()
    print(f"\n{label}: {len(docs)} tools, {len(queries)} queries")
    print(f"  {'method':<24} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6}")
    for name, r in results.items():
        print(f"  {name:<24} {r['r@1']:>6.3f} {r['r@5']:>6.3f} {r['r@10']:>6.3f} {r['mrr']:>6.3f}")
    base = results["plain TF-IDF"]["r@5"]
    print(f"  recall@5 of jarvis hybrid / plain TF-IDF: {results['jarvis hybrid']['r@5'] / base:.2f}x")
    return results["jarvis hybrid"]


def synthetic(docs: list[Doc], size: int) -> list[ToolEntry]:
    """`size` tools: the real ones again and again, under varied server names."""
    variants = [
        "",
        "-cloud",
        "-local",
        "-pro",
        "-lite",
        "-team",
        "-v2",
        "-eu",
        "-us",
        "-beta",
        "-plus",
        "-self",
        "-edge",
        "-mini",
    ]
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
from jarvis.aggregator.discovery.ensemble import Ensemble
Ensemble().embed(["warm up"])
print(f"{{time.perf_counter() - t:.2f}} {{time.process_time() - c:.2f}}")
"""


def cold_start() -> str:
    paths = [str(REPO / src) for src in SOURCES]
    out = subprocess.run(
        [sys.executable, "-c", COLD_START.format(paths=paths)], capture_output=True, text=True, check=True
    ).stdout.split()
    return f"wall {out[0]} s, CPU {out[1]} s"


def timed(work: Callable[[], object]) -> tuple[float, float]:
    started, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - started, time.process_time() - cpu


def machine() -> str:
    """What this machine's core does, so figures from different runs can be compared: a float32
    matrix product on one thread, and the model's CPU time per query token."""
    a = np.random.default_rng(0).random((384, 1536), dtype=np.float32)
    x = np.random.default_rng(1).random((256, 384), dtype=np.float32)
    cpu = time.thread_time()
    for _ in range(40):
        x @ a
    gflops = 40 * 2 * 256 * 384 * 1536 / (time.thread_time() - cpu) / 1e9
    model = Embedder()
    costs = []
    for tokens in (16, 48):
        text = " ".join(["word"] * (tokens - 2))  # [CLS] word ... [SEP]
        model.embed([text])
        cpu = time.thread_time()
        for _ in range(10):
            model.embed([text])
        costs.append(f"{tokens} tokens {(time.thread_time() - cpu) * 100:.1f} ms")
    return f"float32 matmul {gflops:.0f} GFLOP/s on one thread (numpy's BLAS); one query: " + ", ".join(costs)


def latency_catalog(embedded: list[ToolEntry], size: int) -> list[ToolEntry]:
    """`size` tools from the `embedded` ones: each again under new names when there are fewer. A copy
    reads as its original to the model (same tool, server and description), so it needs no embedding,
    while the lexical index and the dense matrix both hold `size` rows."""
    return [
        replace(embedded[i % len(embedded)], name=f"{embedded[i % len(embedded)].name}_{i // len(embedded)}")
        if i >= len(embedded)
        else embedded[i]
        for i in range(size)
    ]


def speed(docs: list[Doc], queries: list[str], tasks: int, size: int, embed: int) -> None:
    """`queries` end with the `tasks` LiveMCPBench task questions (the long ones)."""
    entries = synthetic(docs, size)
    print(f"\nSpeed: {size} tools")
    print(f"  machine: {machine()}")
    print(f"  cold start (new process: imports, model load, first embedding): {cold_start()}")
    before = resident_mb()
    wall, cpu = timed(lambda: ToolIndex(entries))
    print(f"  lexical index build: wall {wall:.2f} s, CPU {cpu:.2f} s")
    store = Path(tempfile.mkdtemp(prefix="jarvis-bench-vectors-"))  # an empty vector store
    new = entries[:: max(1, size // embed)][:embed]  # every k-th: both catalogs' kinds of text
    dense: DenseIndex | None = None

    def embed_all() -> None:
        nonlocal dense
        dense = ready_dense(new, store)

    wall, cpu = timed(embed_all)
    scale = size / len(new)
    per = (
        f" ({len(new)} of them, every {size // len(new)}th; "
        f"x{scale:.0f}: wall {wall * scale:.0f} s, CPU {cpu * scale:.0f} s)"
        if scale > 1
        else ""
    )
    print(
        f"  embedding {size} new tools (empty vector store, {dense_module.WORKERS} workers): "
        f"wall {wall:.1f} s, CPU {cpu:.1f} s{per}"
    )
    assert dense is not None
    dense.stop()
    wall, cpu = timed(lambda: ready_dense(new, store).stop())
    print(
        f"  restart over the same {len(new)} tools (vectors read back, none embedded): "
        f"wall {wall:.2f} s, CPU {cpu:.2f} s"
    )
    catalog = latency_catalog(new, size)
    dense = ready_dense(catalog, store)
    hybrid, lexical = ToolIndex(catalog, dense=dense), ToolIndex(catalog)
    print(f"  resident memory added (both indexes, the model, {size} vectors): {resident_mb() - before:.0f} MB")
    scoped = Principal(token_id="t", name="scoped", scopes=("servers:bing-cn-mcp",))
    runs = (
        ("lexical", lexical, False),
        ("hybrid, query embedded", hybrid, True),
        ("hybrid, query vector cached", hybrid, False),
    )
    for label, index, embedded in runs:
        for who, principal in (("local admin", LOCAL_ADMIN), ("servers:bing-cn-mcp token", scoped)):
            allowed = None if sees_everything(principal) else visible_to(principal, lambda _name: None)
            dense_module.QUERY_CACHE = 0 if embedded else 10 * len(queries)  # every query and its sentences
            for q in queries[:50]:
                index.search("warm " + q, 10, allowed)
            for q in queries if not embedded else ():
                index.search(q, 10, allowed)  # fills the query cache
            wall_s, cpu_s = [], []
            for q in queries:
                w0, c0 = time.perf_counter(), time.process_time()
                index.search(q, 10, allowed)
                cpu_s.append(time.process_time() - c0)
                wall_s.append(time.perf_counter() - w0)
            print(f"  search {label:<28} as {who:<26} wall {percentiles(wall_s)}; CPU {percentiles(cpu_s)}")
            if embedded and who == "local admin":
                print(
                    f"    of which the {tasks} task questions: wall {percentiles(wall_s[-tasks:])}; "
                    f"CPU {percentiles(cpu_s[-tasks:])}"
                )
    dense.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 MetaTool queries instead of all")
    parser.add_argument("--size", type=int, default=10_000, help="tools in the speed test")
    parser.add_argument(
        "--embed",
        type=int,
        default=0,
        help="embed only this many of the new tools (every k-th) and scale the time up (a loaded machine); "
        "the latency catalog repeats them under new names up to --size",
    )
    parser.add_argument("--cache", type=Path, default=default_cache(), help="vector store of the quality runs")
    parser.add_argument("--part", choices=("all", "quality", "speed"), default="all")
    args = parser.parse_args()
    meta_docs, meta_queries = metatool()
    live_docs, live_queries = livemcpbench_tasks()
    rng = random.Random(7)
    if args.quick:
        meta_queries = rng.sample(meta_queries, 2000)
    if args.part != "speed":
        quality("MetaTool dev", meta_docs, meta_queries, args.cache)
        quality("LiveMCPBench task questions", live_docs, live_queries, args.cache)
    timing = [q[:500] for q, _ in rng.sample(meta_queries, 1250)] + [q[:500] for q, _ in live_queries]
    if args.part != "quality":
        speed(meta_docs + live_docs, timing, len(live_queries), args.size, args.embed or args.size)


if __name__ == "__main__":
    main()
