"""Code mode (issue 35): bytes that reach the model, and what a run costs, against a real `jarvis up`.

Each task is done twice, as an agent would see it:
  - sequential: tool_find for the tools it needs, tool_describe for each tool's input schema (what it needs to
    call it), then one tool_call per step, every result read by the model;
  - code: tool_find with format="typescript" (declarations), then one code_run whose program makes the calls.
Bytes to the model = the /mcp tool definitions as a model reads them (name, description, input schema: what Claude
Code sends the Messages API, tests/e2e/test_code_mode_claude.py) + every call's arguments + every result's text,
both ways; each mean is printed again counting the whole tools/list JSON (annotations too). The tasks
(bench/code_mode_tasks.py): on the reference servers, installed the way a user would, on Jarvis's own tools, and a
held-out set, reported apart from the target's mean.

Then: an inner call's cost beside a direct tool_call (p50), a trivial run's latency warm (p50), and 16 runs
at once. Run: .venv/bin/python bench/code_mode.py
"""

from __future__ import annotations

import asyncio
import json
import shutil
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from code_mode_tasks import DOCS, HELD_OUT_TASKS, RECORDS, REFERENCE_TASKS, TASKS, Meter, Task, text_of
from common import REPO, mcp_client, temp_jarvis
from mcp import Client

from tests.support.discovery import definitions_bytes, listing_bytes
from tests.support.downstream import create_server, reference_server


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


async def both_ways(client: Client, task: Task) -> tuple[int, int]:
    """The bytes of each way past the tool listing, which both ways read."""
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
    return seq.bytes, code.bytes


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
                break
            await asyncio.sleep(0.5)
        else:
            raise RuntimeError(f"the memory server never answered: {text_of(made)[:300]}")
        await hybrid_search(client)


async def hybrid_search(client: Client) -> None:
    """Wait until tool_find ranks as it will from now on: every tool's vector embedded (hybrid), not the lexical
    ranking it answers with while the new servers' tools are embedded, so both ways of every task find alike."""
    for _ in range(600):
        status = json.loads(
            text_of(await client.call_tool("tool_call", {"name": "jarvis_check_status", "arguments": {}}))
        )
        if status["discovery"]["search"] == "hybrid":
            return
        await asyncio.sleep(0.5)
    raise RuntimeError(f"tool_find never ranked by meaning: {status['discovery']}")


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
        return f"{what}: {mean:.1%} saved on average per task, {total:.1%} of all bytes"


@dataclass(frozen=True)
class Listing:
    """The /mcp listing, counted both ways: as the model reads it (tool definitions) and as tools/list sends it."""

    definitions: int
    tools_list: int


@dataclass
class Savings:
    """Per-task savings with the listing as the model reads it, and with the whole tools/list JSON beside them."""

    read: Tally = field(default_factory=Tally)
    whole: Tally = field(default_factory=Tally)

    def add(self, listing: Listing, seq: int, code: int) -> None:
        self.read.add(listing.definitions + seq, listing.definitions + code)
        self.whole.add(listing.tools_list + seq, listing.tools_list + code)

    def lines(self, what: str) -> str:
        return f"{self.read.line(what)}\n{self.whole.line('  counting the whole tools/list JSON instead')}"


async def compare(client: Client, label: str, tasks: list[Task], listing: Listing, everything: Savings) -> None:
    print(f"{label:<62} {'sequential':>10} {'code':>7} {'saved':>6}")
    these = Savings()
    for task in tasks:
        seq, code = await both_ways(client, task)
        these.add(listing, seq, code)
        everything.add(listing, seq, code)
        seq, code = listing.definitions + seq, listing.definitions + code
        print(f"{task.name:<62} {seq:>10} {code:>7} {1 - code / seq:>6.0%}")
    print(these.lines(label) + "\n")


async def main() -> None:
    with temp_jarvis() as jarvis:
        await install_reference_servers(jarvis)
        async with mcp_client(jarvis.url("/mcp")) as client:
            listed = await client.list_tools()
            listing = Listing(definitions_bytes(listed), listing_bytes(listed))
            print(
                f"/mcp listing, counted both ways: {listing.definitions} bytes of tool definitions as a model reads "
                f"them ({listing.tools_list} bytes of tools/list JSON with the annotations)\n"
            )
            await client.call_tool("code_run", {"code": "return 1"})  # the pool starts on first use
            everything = Savings()
            await compare(client, "on the reference servers", REFERENCE_TASKS, listing, everything)
            await compare(client, "on Jarvis's own tools", TASKS, listing, everything)
            print(everything.lines(f"all {len(everything.read.savings)} tasks (target >= 60% on average)") + "\n")
            await compare(client, "held out (not used to shape the format)", HELD_OUT_TASKS, listing, Savings())

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
