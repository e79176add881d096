"""Aggregator workers: calls/s and p50/p99 with 1 worker and with one worker per core, beside a bare SDK server.

Same run, rounds interleaved (every server stays up, so the machine's background load hits all alike),
1 and 16 concurrent MCP sessions over streamable HTTP on loopback, for:
- the bare mcp-SDK server's trivial tool `ping` (one process, JSON answers as Jarvis gives);
- the same tool proxied through Jarvis: a profile whose one stdio server is that SDK server;
- `jarvis_server action=list`.
Jarvis runs as `jarvis up --workers 1` and `--workers N` (N = cores; with Redis, which more than one
worker needs). The clients run in `--client-processes` processes so that one Python process driving
16 sessions is not what limits the figures. Targets (issue 13): N workers serve >= 1.8x the bare single
process's calls/s on `jarvis_server list`; proxying adds <= 1 ms p50 over the SDK's own HTTP hop; p99 at
16 clients no worse than the bare server's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from common import LoadResult, bare_server, mcp_client, temp_jarvis

STDIO_PING = """
import anyio, mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(name="ping", description="trivial",
                                 input_schema={"type": "object", "properties": {}})])

async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(text="pong")])

server = Server("bare", on_list_tools=list_tools, on_call_tool=call_tool)

async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
"""
CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "ping": ("ping", {}),
    "proxied": ("pinger__ping", {}),
    "list": ("jarvis_server", {"action": "list"}),
}


async def _clients(
    url: str, clients: int, calls: int, call: Callable[[Any], Awaitable[Any]]
) -> tuple[list[float], float, int]:
    latencies: list[float] = []
    errors = 0
    barrier = asyncio.Barrier(clients + 1)

    async def one() -> None:
        nonlocal errors
        async with mcp_client(url) as client:
            for _ in range(10):
                await call(client)
            await barrier.wait()
            for _ in range(calls):
                started = time.perf_counter()
                result = await call(client)
                latencies.append((time.perf_counter() - started) * 1000)
                errors += bool(getattr(result, "is_error", False))

    tasks = [asyncio.create_task(one()) for _ in range(clients)]
    await barrier.wait()
    started = time.perf_counter()
    await asyncio.gather(*tasks)
    return latencies, time.perf_counter() - started, errors


def _load_process(url: str, clients: int, calls: int, kind: str) -> tuple[list[float], float, int]:
    tool, arguments = CALLS[kind]
    return asyncio.run(_clients(url, clients, calls, lambda c: c.call_tool(tool, arguments)))


def load(pool: ProcessPoolExecutor, size: int, label: str, url: str, clients: int, calls: int, kind: str) -> LoadResult:
    """`clients` sessions spread over the pool's `size` processes; calls/s adds up each process's own rate."""
    processes = min(clients, size)
    shares = [clients // processes + (i < clients % processes) for i in range(processes)]
    futures = [pool.submit(_load_process, url, n, calls, kind) for n in shares]
    latencies: list[float] = []
    rate = errors = 0.0
    for future in futures:
        lat, seconds, errs = future.result()
        latencies += lat
        rate += len(lat) / seconds
        errors += errs
    return LoadResult(label, len(latencies), int(errors), len(latencies) / rate, latencies)


async def prepare(url: str, script: Path) -> None:
    async with mcp_client(url) as admin:
        await admin.call_tool(
            "jarvis_server",
            {"action": "create", "name": "pinger", "type": "stdio", "command": sys.executable, "args": [str(script)]},
        )
        await admin.call_tool("jarvis_profile", {"action": "create", "name": "bench", "servers": ["pinger"]})


def main(calls: int, rounds: int, workers: int, client_processes: int, redis: str, levels: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "stdio_ping.py"
        script.write_text(STDIO_PING)
        env = ("--workers", str(workers))
        os.environ["JARVIS_REDIS_URL"] = redis  # read by the jarvis processes started below
        with (
            bare_server("json") as bare_url,
            temp_jarvis("--workers", "1") as one,
            temp_jarvis(*env) as many,
            ProcessPoolExecutor(client_processes) as pool,
        ):
            for running in (one, many):
                asyncio.run(prepare(running.url(), script))
            time.sleep(3)  # every worker sees the profile (they re-read the registry every 2 s)
            cases = [
                ("bare SDK server: ping", bare_url, "ping"),
                *(
                    case
                    for n, running in ((1, one), (workers, many))
                    for case in (
                        (f"jarvis {n}w: proxied ping", running.url("/mcp/profile/bench"), "proxied"),
                        (f"jarvis {n}w: jarvis_server list", running.url(), "list"),
                    )
                ),
            ]
            print(
                f"{workers} workers = one per core ({os.cpu_count()} cores); {calls} calls per client per round, "
                f"{rounds} interleaved rounds, clients in {client_processes} processes"
            )
            for clients in levels:
                results: dict[str, list[LoadResult]] = {label: [] for label, _, _ in cases}
                for _ in range(rounds):
                    for label, url, kind in cases:
                        results[label].append(load(pool, client_processes, label, url, clients, calls, kind))
                print(f"{clients} concurrent clients (median round by calls/s; p50/p99 over all rounds)")
                merged = {}
                for label, runs in results.items():
                    rate = statistics.median(r.per_second for r in runs)
                    lat = [x for r in runs for x in r.latencies_ms]
                    merged[label] = LoadResult(label, len(lat), sum(r.errors for r in runs), len(lat) / rate, lat)
                    print("  " + merged[label].line())
                bare = merged["bare SDK server: ping"]
                for n in (1, workers):
                    listed, proxied = merged[f"jarvis {n}w: jarvis_server list"], merged[f"jarvis {n}w: proxied ping"]
                    print(
                        f"  {n}w: list calls/s / bare = {listed.per_second / bare.per_second:.2f}x; "
                        f"proxied p50 - bare p50 = {proxied.percentile(0.5) - bare.percentile(0.5):+.2f} ms; "
                        f"proxied p99 / bare p99 = {proxied.percentile(0.99) / bare.percentile(0.99):.2f}x; "
                        f"list p99 / bare p99 = {listed.percentile(0.99) / bare.percentile(0.99):.2f}x"
                    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--client-processes", type=int, default=2)
    parser.add_argument("--clients", default="1,16", help="concurrency levels, comma-separated")
    parser.add_argument("--redis", default=os.environ.get("JARVIS_REDIS_URL") or "redis://127.0.0.1:6379/0")
    options = parser.parse_args()
    main(
        options.calls,
        options.rounds,
        options.workers,
        options.client_processes,
        options.redis,
        [int(c) for c in options.clients.split(",")],
    )
