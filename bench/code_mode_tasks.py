"""The code-mode benchmark's tasks (bench/code_mode.py), each written both ways: as the sequential tool calls an
agent makes, reading every result, and as the one program it would hand to code_run instead.

Three sets: on the reference servers (npm's filesystem over this repo's decision records, memory with a graph of
them, everything), on Jarvis's own tools (catalog, settings, status), and a held-out set written before the typings
answer changed shape (decision 0059) and never used to shape it.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import REPO
from mcp import Client
from mcp_types import TextContent

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


# Held out: written on 2026-11-29 before the declarations changed from JSON-quoted strings to a TypeScript text,
# and never used to decide that change; they show whether it holds on tasks nobody looked at while making it.
PATTERNS = ["oauth", "code", "docker", "token", "cache"]
PHRASES = ["one pinned lock", "generated code is checked", "the gate before the SDK", "scopes", "a cache"]


async def headings_per_record(m: Meter) -> Any:
    texts = {n: await m.tool("files__read_text_file", {"path": f"{DOCS}/{n}"}) for n in RECORDS[10:18]}
    return {n: sum(1 for line in t.splitlines() if line.startswith("## ")) for n, t in texts.items()}


async def longest_echo(m: Meter) -> Any:
    echoes = [str(await m.tool("everything__echo", {"message": p})) for p in PHRASES]
    return max(echoes, key=len)


async def matches_per_pattern(m: Meter) -> Any:
    found = {p: await m.tool("files__search_files", {"path": str(DOCS), "pattern": f"*{p}*"}) for p in PATTERNS}
    return {p: sum(1 for line in str(f).splitlines() if line.startswith("/")) for p, f in found.items()}


async def observation_sizes(m: Meter) -> Any:
    names = [n.removesuffix(".md") for n in RECORDS[20:28]]
    opened = [await m.tool("memory__open_nodes", {"names": [n]}) for n in names]
    return sum(len(o) for g in opened for e in g["entities"] for o in e["observations"])


async def servers_per_query(m: Meter) -> Any:
    queries = ["email", "calendar", "kubernetes", "cloud storage", "notes"]
    return {q: len((await m.tool("jarvis_server", {"action": "search", "query": q}))["results"]) for q in queries}


HELD_OUT_TASKS = [
    Task(
        "second-level headings in 8 records (8 calls)",
        ["read a text file"],
        ["files__read_text_file"],
        headings_per_record,
        f"const names = {json.dumps(RECORDS[10:18])};\n"
        "const counts = await Promise.all(names.map(async (n) => {\n"
        f"  const t = (await tools.files__read_text_file({{ path: `{DOCS}/${{n}}` }})).content;\n"
        "  return [n, t.split('\\n').filter((l) => l.startsWith('## ')).length];\n"
        "}));\nreturn Object.fromEntries(counts);",
    ),
    Task(
        "five echoes, the longest back (5 calls)",
        ["echo a message back"],
        ["everything__echo"],
        longest_echo,
        f"const echoes = await Promise.all({json.dumps(PHRASES)}.map(async (message) => {{\n"
        "  const said = await tools.everything__echo({ message });\n"
        "  return String(said.content ?? said);\n"
        "}));\nreturn echoes.reduce((a, b) => (b.length > a.length ? b : a));",
    ),
    Task(
        "files matching five name patterns (5 calls)",
        ["search files by name pattern"],
        ["files__search_files"],
        matches_per_pattern,
        f"const out: Record<string, number> = {{}};\nfor (const p of {json.dumps(PATTERNS)}) {{\n"
        f"  const f = await tools.files__search_files({{ path: {json.dumps(str(DOCS))}, pattern: `*${{p}}*` }});\n"
        "  out[p] = String(f.content ?? f).split('\\n').filter((l) => l.startsWith('/')).length;\n"
        "}\nreturn out;",
    ),
    Task(
        "observation characters of 8 graph nodes (8 calls)",
        ["open graph nodes by name"],
        ["memory__open_nodes"],
        observation_sizes,
        f"const names = {json.dumps([n.removesuffix('.md') for n in RECORDS[20:28]])};\n"
        "const opened = await Promise.all(names.map((n) => tools.memory__open_nodes({ names: [n] })));\n"
        "return opened.flatMap((g) => g.entities).flatMap((e) => e.observations)"
        ".reduce((sum, o) => sum + o.length, 0);",
    ),
    Task(
        "catalog servers for five needs (5 calls)",
        ["search catalog servers"],
        ["jarvis_server"],
        servers_per_query,
        "const out: Record<string, number> = {};\n"
        "for (const query of ['email', 'calendar', 'kubernetes', 'cloud storage', 'notes'])\n"
        "  out[query] = (await tools.jarvis_server({ action: 'search', query })).results.length;\nreturn out;",
    ),
]


def text_of(result: Any) -> str:
    return "".join(c.text for c in result.content if isinstance(c, TextContent))
