"""How well `tool_find` finds Jarvis's own tools among a team's many downstream tools.

Jarvis's consolidated tools describe themselves in at most 60 characters, most of it their actions
("list|info|uninstall|search|…"), which is what the jarvis surface's budget allows but says little to a search by
meaning. Each tool also carries a summary in words that only discovery reads (`Tool.summary`). This measures both,
in the same run: Jarvis's own tools with the summaries and without them, each among LiveMCPBench's catalog of real
MCP servers' tools (the downstream tools a team would have), searched as tool_find does (hybrid: BM25F and the
embedding models) and by words alone (BM25F).

Queries: bench/data/own_tool_queries.json, what people ask for when the tool they need is Jarvis's own, written
before the summaries were and not changed after measuring. Recall@1/3/5 and MRR over the first 10.
Run: .venv/bin/python bench/own_tools_discovery.py
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path

from common import REPO
from discovery_quality import ready_dense

from jarvis.aggregator.discovery.dense import DenseIndex
from jarvis.aggregator.discovery.entry import ToolEntry
from jarvis.aggregator.discovery.index import ToolIndex
from jarvis.aggregator.discovery.sources import surface_entries
from tests.support.offline_surfaces import offline_surfaces
from tests.support.retrieval_data import Search, livemcpbench_catalog

QUERY_SETS = {
    "written before the summaries, by their author": REPO / "bench" / "data" / "own_tool_queries.json",
    "held out (written by someone who had not seen the summaries)": REPO
    / "bench"
    / "data"
    / "own_tool_queries_held_out.json",
}


def load(path: Path) -> list[tuple[str, str]]:
    return [(q["query"], q["tool"]) for q in json.loads(path.read_text())["queries"]]


def own_entries() -> tuple[list[ToolEntry], list[ToolEntry]]:
    """Jarvis's own tools as discovery indexes them, and the same without their summaries."""
    surfaces = offline_surfaces()
    instructions = {s.name: s.instructions for s in surfaces}
    entries = list(surface_entries(surfaces, "discovery"))
    return entries, [replace(e, context=instructions[e.source]) for e in entries]


def searches(entries: list[ToolEntry], cache: Path) -> tuple[Search, Search, DenseIndex]:
    dense = ready_dense(entries, cache)
    hybrid, lexical = ToolIndex(entries, dense=dense), ToolIndex(entries)
    return (
        lambda q: [h.entry.name for h in hybrid.search(q, 10)],
        lambda q: [h.entry.name for h in lexical.search(q, 10)],
        dense,
    )


def ranks(search: Search, queries: list[tuple[str, str]]) -> list[int | None]:
    """Where each query's tool stands in what the search found (1 = first), None past the first 10."""
    return [next((i + 1 for i, name in enumerate(search(q)) if name == tool), None) for q, tool in queries]


def row(label: str, found: list[int | None]) -> str:
    def within(k: int) -> float:
        return sum(1 for r in found if r is not None and r <= k) / len(found)

    mrr = sum(1 / r for r in found if r is not None) / len(found)
    return f"  {label:<40} {within(1):>6.3f} {within(3):>6.3f} {within(5):>6.3f} {mrr:>6.3f}"


def main() -> None:
    sets = {name: load(path) for name, path in QUERY_SETS.items()}
    with_summaries, without = own_entries()
    neighbours = [d.entry() for d in livemcpbench_catalog()]
    print(f"{len(with_summaries)} Jarvis tools among {len(neighbours)} LiveMCPBench tools")
    results: dict[str, list[str]] = {name: [] for name in sets}
    with tempfile.TemporaryDirectory() as cache:
        for label, own in (("without summaries", without), ("with summaries", with_summaries)):
            hybrid, lexical, dense = searches(own + neighbours, Path(cache))
            for name, queries in sets.items():
                results[name].append(row(f"{label}, hybrid (tool_find)", ranks(hybrid, queries)))
                results[name].append(row(f"{label}, words alone (BM25F)", ranks(lexical, queries)))
            dense.stop()
    for name, lines in results.items():
        print(f"\n{name}: {len(sets[name])} queries")
        print(f"  {'':<40} {'R@1':>6} {'R@3':>6} {'R@5':>6} {'MRR':>6}")
        print("\n".join(lines))


if __name__ == "__main__":
    main()
