"""Code mode (issue 35): bytes that reach the model, and what a run costs, against a real `jarvis up`.

Each task is done twice, as an agent would see it:
  - sequential: tool_find for the tools it needs, tool_describe for each tool's input schema (what it needs to
    call it), then one tool_call per step, every result read by the model;
  - code: tool_find with format="typescript" (declarations), then one code_run whose program makes the calls.
Bytes to the model = the /mcp tools/list + every call's arguments + every result's text, both ways.
Two sets of tasks: on the reference servers (npm's filesystem over this repo's decision records, memory with a
graph of them, everything), installed the way a user would, and on Jarvis's own tools (catalog, settings, status).

Then: an inner call's cost beside a direct tool_call (p50), a trivial run's latency warm (p50), and 16 runs
at once. Run: .venv/bin/python bench/code_mode.py
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import REPO, mcp_client, temp_jarvis
from mcp import Client
from mcp_types import TextContent

from tests.support.downstream import create_server, reference_server

TOPICS = ["git", "files", "database", "browser", "slack", "time", "search", "memory"]
KEYS = ["aggregator_url", "default_profile", "share.default_expiry_seconds", "discovery.default_limit", "log_level"]


class Meter:
    """Counts the bytes an agent's context receives: what it sends (arguments) and what it reads (results)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.bytes = 0

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        sent = len(json.dumps({"name": tool, "arguments": arguments}, separators=(",", ":")).encode())
        result = await self.client.call_tool(tool, arguments)
        text = text_of(result)
        self.bytes += sent + len(text.encode())
        if result.is_error:
            raise RuntimeError(f"{tool}: {text[:300]}")
        try:
            return json.loads(text)
        except ValueError:  # a downstream server's plain text
            return text

    async def tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return await self.call("tool_call", {"name": name, "arguments": arguments})


@dataclass(frozen=True)
class Task:
    name: str
    finds: list[str]  # what the agent searches for to find its tools
    uses: list[str]  # the tools it calls, whose input schemas it reads
    sequential: Callable[[Meter], Awaitable[Any]]
    program: str


async def catalog_tops(m: Meter) -> Any:
    return {t: (await m.tool("jarvis_server", {"action": "search", "query": t}))["results"][0]["name"] for t in TOPICS}


async def non_default_settings(m: Meter) -> Any:
    listed = await m.tool("jarvis_config", {"action": "list"})
    values = {k: await m.tool("jarvis_config", {"action": "get", "key": k}) for k in KEYS}
    return {"listed": len(listed["config"]), "got": len(values)}


async def rich_servers(m: Meter) -> Any:
    found = [await m.tool("jarvis_server", {"action": "search", "query": t}) for t in TOPICS[:6]]
    return sorted({r["name"] for f in found for r in f["results"] if len(r.get("matched_tools", [])) >= 3})


async def health_summary(m: Meter) -> Any:
    status = await m.tool("jarvis_check_status", {})
    servers = await m.tool("jarvis_server", {"action": "list"})
    config = await m.tool("jarvis_config", {"action": "list"})
    found = [await m.tool("jarvis_server", {"action": "search", "query": t}) for t in TOPICS[:3]]
    return {"healthy": status["healthy"], "servers": servers["count"], "config": len(config["config"]), "n": len(found)}


async def tools_for_topics(m: Meter) -> Any:
    return {t: (await m.call("tool_find", {"query": f"{t} tools", "limit": 3}))["count"] for t in TOPICS[:6]}


TOPICS_JS = json.dumps(TOPICS)
KEYS_JS = json.dumps(KEYS)
TASKS = [
    Task(
        "top catalog server per topic (8 calls)",
        ["search catalog servers"],
        ["jarvis_server"],
        catalog_tops,
        f"const out: Record<string, string> = {{}};\nfor (const t of {TOPICS_JS}) "
        "out[t] = (await tools.jarvis_server({ action: 'search', query: t })).results[0].name;\nreturn out;",
    ),
    Task(
        "settings list and five gets (6 calls)",
        ["settings config"],
        ["jarvis_config"],
        non_default_settings,
        "const listed = await tools.jarvis_config({ action: 'list' });\n"
        f"const got = await Promise.all({KEYS_JS}.map((key) => tools.jarvis_config({{ action: 'get', key }})));\n"
        "return { listed: listed.config.length, got: got.length };",
    ),
    Task(
        "servers with 3+ matching tools over 6 searches (6 calls)",
        ["search catalog servers"],
        ["jarvis_server"],
        rich_servers,
        f"const found = await Promise.all({json.dumps(TOPICS[:6])}.map((query) => "
        "tools.jarvis_server({ action: 'search', query })));\nconst names = new Set<string>();\n"
        "for (const f of found)\n  for (const r of f.results)\n"
        "    if ((r.matched_tools ?? []).length >= 3) names.add(r.name);\n"
        "return [...names].sort();",
    ),
    Task(
        "health summary: status, servers, settings, 3 searches (6 calls)",
        ["check status health", "list servers", "settings config"],
        ["jarvis_check_status", "jarvis_server", "jarvis_config"],
        health_summary,
        "const status = await tools.jarvis_check_status({});\n"
        "const servers = await tools.jarvis_server({ action: 'list' });\n"
        "const config = await tools.jarvis_config({ action: 'list' });\n"
        f"const found = await Promise.all({json.dumps(TOPICS[:3])}.map((query) => "
        "tools.jarvis_server({ action: 'search', query })));\n"
        "return { healthy: status.healthy, servers: servers.count, config: config.config.length, n: found.length };",
    ),
    Task(
        "tools for six topics (6 tool_finds)",
        [],
        [],
        tools_for_topics,
        "const out: Record<string, number> = {};\n"
        f"for (const t of {json.dumps(TOPICS[:6])}) out[t] = (await tool_find(`${{t}} tools`, 3)).count;\nreturn out;",
    ),
]


# The reference servers' data: this repo's decision records, copied where the filesystem server may read them.
DOCS = Path(tempfile.mkdtemp(prefix="jarvis-bench-docs-"))
RECORDS = sorted(p.name for p in (REPO / "docs" / "decisions").glob("0*.md"))
SEARCHES = ["OAuth", "Deno", "registry", "token", "Docker", "cache"]
CITIES = ["New York", "Chicago", "Los Angeles"]


async def records_mentioning_oauth(m: Meter) -> Any:
    listed = await m.tool("files__list_directory", {"path": str(DOCS)})
    names = [line.removeprefix("[FILE] ") for line in listed.splitlines() if line.startswith("[FILE]")][-12:]
    texts = {n: await m.tool("files__read_text_file", {"path": f"{DOCS}/{n}"}) for n in names}
    return sorted(n for n, text in texts.items() if "OAuth" in text)


async def record_titles(m: Meter) -> Any:
    listed = await m.tool("files__list_directory", {"path": str(DOCS)})
    names = [line.removeprefix("[FILE] ") for line in listed.splitlines() if line.startswith("[FILE]")][:15]
    return [(await m.tool("files__read_text_file", {"path": f"{DOCS}/{n}", "head": 1})).lstrip("# ") for n in names]


async def biggest_records(m: Meter) -> Any:
    infos = {n: await m.tool("files__get_file_info", {"path": f"{DOCS}/{n}"}) for n in RECORDS[:10]}
    sizes = {n: int(info.split("size: ")[1].split("\n")[0]) for n, info in infos.items()}
    return sorted(sizes, key=lambda n: -sizes[n])[:3]


async def graph_topics(m: Meter) -> Any:
    found = {q: await m.tool("memory__search_nodes", {"query": q}) for q in SEARCHES}
    names = sorted({e["name"] for f in found.values() for e in f["entities"]})
    opened = await m.tool("memory__open_nodes", {"names": names})
    return {"per_topic": {q: len(f["entities"]) for q, f in found.items()}, "opened": len(opened["entities"])}


async def weather_total(m: Meter) -> Any:
    seen = [await m.tool("everything__get-structured-content", {"location": c}) for c in CITIES]
    total = seen[0]["temperature"]
    for s in seen[1:]:
        said = await m.tool("everything__get-sum", {"a": total, "b": s["temperature"]})
        total = int(re.findall(r"-?\d+", str(said))[-1])
    return {"total": total, "wettest": max(zip(CITIES, seen, strict=True), key=lambda cs: cs[1]["humidity"])[0]}


LIST_FILES = (
    f"const listed = await tools.files__list_directory({{ path: {json.dumps(str(DOCS))} }});\n"
    "const names = String(listed.content ?? listed).split('\\n').filter((l) => l.startsWith('[FILE] '))"
    ".map((l) => l.slice(7));\n"
)
REFERENCE_TASKS = [
    Task(
        "records of the last 12 that mention OAuth (13 calls)",
        ["list directory", "read a text file"],
        ["files__list_directory", "files__read_text_file"],
        records_mentioning_oauth,
        LIST_FILES + "const texts = await Promise.all(names.slice(-12).map(async (n) => [n, "
        f"(await tools.files__read_text_file({{ path: `{DOCS}/${{n}}` }})).content]));\n"
        "return texts.filter(([, t]) => t.includes('OAuth')).map(([n]) => n).sort();",
    ),
    Task(
        "titles of 15 records (16 calls)",
        ["list directory", "read a text file"],
        ["files__list_directory", "files__read_text_file"],
        record_titles,
        LIST_FILES + "return await Promise.all(names.slice(0, 15).map(async (n) => "
        f"(await tools.files__read_text_file({{ path: `{DOCS}/${{n}}`, head: 1 }})).content.replace(/^# /, '')));",
    ),
    Task(
        "the three biggest of 10 records (10 calls)",
        ["file size info"],
        ["files__get_file_info"],
        biggest_records,
        f"const names = {json.dumps(RECORDS[:10])};\n"
        "const sizes = await Promise.all(names.map(async (n) => {\n"
        f"  const info = await tools.files__get_file_info({{ path: `{DOCS}/${{n}}` }});\n"
        "  return [n, Number(String(info.content ?? info).match(/size: (\\d+)/)[1])];\n"
        "}));\n"
        "return sizes.sort((a, b) => b[1] - a[1]).slice(0, 3).map(([n]) => n);",
    ),
    Task(
        "six topics in the memory graph, matches opened (7 calls)",
        ["search knowledge graph nodes", "open graph nodes by name"],
        ["memory__search_nodes", "memory__open_nodes"],
        graph_topics,
        f"const found = await Promise.all({json.dumps(SEARCHES)}.map(async (query) => "
        "[query, await tools.memory__search_nodes({ query })]));\n"
        "const names = [...new Set(found.flatMap(([, f]) => f.entities.map((e) => e.name)))].sort();\n"
        "const opened = await tools.memory__open_nodes({ names });\n"
        "return { per_topic: Object.fromEntries(found.map(([q, f]) => [q, f.entities.length])), "
        "opened: opened.entities.length };",
    ),
    Task(
        "weather in three cities, summed with get-sum (5 calls)",
        ["weather structured content", "sum of two numbers"],
        ["everything__get-structured-content", "everything__get-sum"],
        weather_total,
        f"const cities = {json.dumps(CITIES)};\n"
        "const seen = await Promise.all(cities.map((location) => tools['everything__get-structured-content']"
        "({ location })));\nlet total = seen[0].temperature;\n"
        "for (const s of seen.slice(1)) {\n"
        "  const said = await tools['everything__get-sum']({ a: total, b: s.temperature });\n"
        "  total = Number(String(said.content ?? said).match(/-?\\d+/g).pop());\n}\n"
        "const wettest = cities[seen.map((s) => s.humidity).indexOf(Math.max(...seen.map((s) => s.humidity)))];\n"
        "return { total, wettest };",
    ),
]


def text_of(result: Any) -> str:
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


async def listing_bytes(client: Client) -> int:
    listed = await client.list_tools()
    return len(json.dumps(listed.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":")))


async def both_ways(client: Client, task: Task, listing: int) -> tuple[int, int]:
    seq = Meter(client)
    for query in task.finds:
        await seq.call("tool_find", {"query": query, "limit": 3})
    for name in task.uses:
        await seq.call("tool_describe", {"name": name})
    expected = await task.sequential(seq)
    code = Meter(client)
    for query in task.finds:
        await code.call("tool_find", {"query": query, "limit": 3, "format": "typescript"})
    ran = await code.call("code_run", {"code": task.program})
    # Both ways did the same work: the program's answer is the one the sequential agent worked out.
    if json.dumps(ran["result"], sort_keys=True) != json.dumps(expected, sort_keys=True):
        raise RuntimeError(f"{task.name}: the program answered {ran['result']!r}, the calls gave {expected!r}")
    return listing + seq.bytes, listing + code.bytes


async def timed(make: Callable[[], Awaitable[Any]], n: int) -> list[float]:
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        await make()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


async def install_reference_servers(jarvis: Any) -> None:
    """Install the reference servers as a user would, and give the memory server a graph of the records."""
    for name in RECORDS:
        shutil.copy(REPO / "docs" / "decisions" / name, DOCS / name)
    async with mcp_client(jarvis.url("/mcp/jarvis")) as admin:
        await create_server(admin, "files", reference_server("server-filesystem", str(DOCS)))
        memory = {"MEMORY_FILE_PATH": str(DOCS.parent / f"{DOCS.name}-memory.jsonl")}
        await create_server(admin, "memory", reference_server("server-memory"), memory)
        await create_server(admin, "everything", reference_server("server-everything", "stdio"))
    entities = [
        {"name": name.removesuffix(".md"), "entityType": "decision", "observations": [line]}
        for name in RECORDS
        for line in [(DOCS / name).read_text().split("\n\n")[1][:400]]
    ]
    async with mcp_client(jarvis.url("/mcp")) as client:
        for _ in range(120):  # until the hosted servers answer
            made = await client.call_tool(
                "tool_call", {"name": "memory__create_entities", "arguments": {"entities": entities}}
            )
            if not made.is_error:
                return
            await asyncio.sleep(0.5)
        raise RuntimeError(f"the memory server never answered: {text_of(made)[:300]}")


@dataclass
class Tally:
    seq: int = 0
    code: int = 0
    savings: list[float] = field(default_factory=list)

    def add(self, seq: int, code: int) -> None:
        self.seq, self.code = self.seq + seq, self.code + code
        self.savings.append(1 - code / seq)

    def line(self, what: str) -> str:
        mean, total = statistics.mean(self.savings), 1 - self.code / self.seq
        return f"{what}: {mean:.0%} saved on average per task, {total:.0%} of all bytes"


async def compare(client: Client, label: str, tasks: list[Task], listing: int, everything: Tally) -> None:
    print(f"{label:<62} {'sequential':>10} {'code':>7} {'saved':>6}")
    these = Tally()
    for task in tasks:
        seq, code = await both_ways(client, task, listing)
        these.add(seq, code)
        everything.add(seq, code)
        print(f"{task.name:<62} {seq:>10} {code:>7} {1 - code / seq:>6.0%}")
    print(these.line(label) + "\n")


async def main() -> None:
    with temp_jarvis() as jarvis:
        await install_reference_servers(jarvis)
        async with mcp_client(jarvis.url("/mcp")) as client:
            listing = await listing_bytes(client)
            print(f"/mcp tools/list, counted both ways: {listing} bytes\n")
            await client.call_tool("code_run", {"code": "return 1"})  # the pool starts on first use
            everything = Tally()
            await compare(client, "on the reference servers", REFERENCE_TASKS, listing, everything)
            await compare(client, "on Jarvis's own tools", TASKS, listing, everything)
            print(everything.line(f"all {len(everything.savings)} tasks") + " (target >= 60% on average)")

            get = {"name": "jarvis_config", "arguments": {"action": "get", "key": "log_level"}}
            direct = await timed(lambda: client.call_tool("tool_call", get), 60)
            trivial = await timed(lambda: client.call_tool("code_run", {"code": "return 1"}), 60)
            forty = "for (let i = 0; i < 40; i++) await tools.jarvis_config({ action: 'get', key: 'log_level' });"
            runs = await timed(lambda: client.call_tool("code_run", {"code": forty}), 15)
            inner = [json.loads(text_of(await client.call_tool("code_run", {"code": forty})))]
            inside = sum(c["ms"] for answer in inner for c in answer["calls"]) / 40
            per_call = (p50(runs) - p50(trivial)) / 40
            print(f"direct tool_call round trip p50: {p50(direct):.2f} ms")
            print(f"trivial code_run round trip p50 (warm): {p50(trivial):.2f} ms (target <= 50 ms)")
            print(
                f"inner call, run time per call p50: {per_call:.2f} ms ({per_call - p50(direct):+.2f} ms beside the "
                f"direct tool_call, target <= +1 ms); inside Jarvis, mean: {inside:.2f} ms"
            )

        async def one(i: int) -> bool:
            async with mcp_client(jarvis.url("/mcp")) as c:
                program = f"const r = await tools.jarvis_config({{ action: 'get', key: 'log_level' }}); return {i};"
                result = await c.call_tool("code_run", {"code": program})
                return not result.is_error and json.loads(text_of(result))["result"] == i

        started = time.perf_counter()
        done = await asyncio.gather(*(one(i) for i in range(16)), return_exceptions=True)
        errors = sum(1 for d in done if d is not True)
        print(f"16 concurrent runs: {16 - errors} ok, {errors} errors in {(time.perf_counter() - started):.2f} s")


if __name__ == "__main__":
    asyncio.run(main())
