"""Aggregator workers: calls/s and p50/p99 with 1 worker and with one worker per core, beside a bare SDK server.

Same run, rounds interleaved (every server stays up, so the machine's background load hits all alike),
1 and 16 concurrent MCP sessions over streamable HTTP on loopback, for:
- the bare mcp-SDK server's trivial tool `ping`, one process, twice: as its `streamable_http_app()`
  serves by default (SSE answers) and with JSON answers (as Jarvis gives);
- the same tool proxied through Jarvis: a profile whose one server is that SDK server over stdio, and one whose
  server is the bare SSE server itself over streamable HTTP (Jarvis's hop in front of the SDK's own HTTP hop);
- `jarvis_server action=list`.
Jarvis runs as `jarvis up --workers 1` and `--workers N` (N = cores; with Redis, which more than one
worker needs), with the benchmark's profiles in `servers.autostart_profiles`: each worker runs its own copy of
a server, and one started on a call would put that launch inside the measured calls. By default the SDK's
client opens each session and makes one call, and that request is
replayed on a raw keep-alive connection (bench/replay.py), so the clients' own CPU does not decide the
figures on a machine whose cores they share; `--client wrk` has the C load generator wrk send the captured
requests instead (bench/wrk_load.py: ~140 us less client CPU per call, which several workers otherwise share
with the client); `--client sdk` drives every call with the SDK's client.
`--protocol 2026-07-28` measures stateless-era requests instead of 2025-11-25 sessions; with `--downstream-era
modern` the bare servers also refuse `initialize`, so the HTTP-proxied case measures a 2026-only downstream (issue
33). Rounds start once discovery has embedded the catalog in every worker. Each SDK server (the bare ones, the stdio
ping servers) logs how long its full garbage collections stop it, printed per case: those pauses are an SDK server's
p99 at 16 clients, and the bare SSE server is also the HTTP-proxied case's downstream, so its pauses are in that
case's calls too. `--frozen-bare` has the bare servers freeze their start-up heap, as Jarvis does: their collections
then stop them for about 1 ms, which takes those pauses out of every case and leaves each one's own tail (a
diagnosis, not how the SDK serves).
Targets (issue 13): N workers serve >= 1.8x the bare single process's calls/s on `jarvis_server list`; proxying adds
<= 1 ms p50 over the SDK's own HTTP hop; p99 at 16 clients no worse than the bare server's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import FULL_COLLECTIONS, LoadResult, PauseLog, bare_server, mcp_client, temp_jarvis
from replay import captured_call, replay
from wrk_load import wrk_load

from tests.support.stack import result_json

STDIO_PING = (
    FULL_COLLECTIONS
    + """
import sys, anyio, mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

log_full_collections(sys.argv[1])

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
)
CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "ping": ("ping", {}),
    "proxied": ("pinger__ping", {}),
    "proxied-http": ("webping__ping", {}),
    "list": ("jarvis_server", {"action": "list"}),
}


async def _sdk_clients(
    url: str, clients: int, calls: int, call: Callable[[Any], Awaitable[Any]], mode: str
) -> tuple[list[float], float, int]:
    latencies: list[float] = []
    errors = 0
    barrier = asyncio.Barrier(clients + 1)

    async def one() -> None:
        nonlocal errors
        async with mcp_client(url, mode=mode) as client:
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


async def _replayed(url: str, clients: int, calls: int, kind: str, mode: str) -> tuple[list[float], float, int]:
    tool, arguments = CALLS[kind]
    async with contextlib.AsyncExitStack() as sessions:
        captured = [
            await sessions.enter_async_context(captured_call(url, tool, arguments, mode)) for _ in range(clients)
        ]
        return await replay(captured, calls)


async def _wrk(label: str, url: str, clients: int, kind: str, mode: str, seconds: float) -> LoadResult:
    """wrk drives the captured requests while the SDK's sessions stay open (a 2025 session ends with its client)."""
    tool, arguments = CALLS[kind]
    async with contextlib.AsyncExitStack() as sessions:
        captured = [
            await sessions.enter_async_context(captured_call(url, tool, arguments, mode)) for _ in range(clients)
        ]
        return await asyncio.to_thread(wrk_load, label, captured, seconds)


def _load_process(
    url: str, clients: int, calls: int, kind: str, client: str, mode: str
) -> tuple[list[float], float, int]:
    if client == "replay":
        return asyncio.run(_replayed(url, clients, calls, kind, mode))
    tool, arguments = CALLS[kind]
    return asyncio.run(_sdk_clients(url, clients, calls, lambda c: c.call_tool(tool, arguments), mode))


@dataclass(frozen=True)
class Load:
    """How the clients drive a case: which client, which protocol, how many processes."""

    pool: ProcessPoolExecutor
    processes: int
    client: str
    mode: str
    seconds: float

    def run(self, label: str, url: str, clients: int, calls: int, kind: str) -> LoadResult:
        """`clients` sessions spread over the processes; calls/s adds up each process's own rate."""
        if self.client == "wrk":
            return asyncio.run(_wrk(label, url, clients, kind, self.mode, self.seconds))
        processes = min(clients, self.processes)
        shares = [clients // processes + (i < clients % processes) for i in range(processes)]
        futures = [self.pool.submit(_load_process, url, n, calls, kind, self.client, self.mode) for n in shares]
        latencies: list[float] = []
        rate = errors = 0.0
        for future in futures:
            lat, seconds, errs = future.result()
            latencies += lat
            rate += len(lat) / seconds
            errors += errs
        return LoadResult(label, len(latencies), int(errors), len(latencies) / rate, latencies)


async def prepare(url: str, script: Path, bare_url: str, pauses: PauseLog) -> None:
    async with mcp_client(url) as admin:
        await admin.call_tool(
            "jarvis_server",
            {
                "action": "create",
                "name": "pinger",
                "type": "stdio",
                "command": sys.executable,
                "args": [str(script), pauses.path],  # each worker's copy of the server logs there
            },
        )
        await admin.call_tool(
            "jarvis_server", {"action": "create", "name": "webping", "type": "streamable-http", "url": bare_url}
        )
        await admin.call_tool("jarvis_profile", {"action": "create", "name": "bench", "servers": ["pinger"]})
        await admin.call_tool("jarvis_profile", {"action": "create", "name": "bench-http", "servers": ["webping"]})
        # Every worker starts its copy of the servers now, not on its first call: otherwise whichever worker a
        # round's connection lands on first launches a stdio server inside the measured calls (~0.4 s).
        await admin.call_tool(
            "jarvis_config", {"action": "set", "key": "servers.autostart_profiles", "value": ["bench", "bench-http"]}
        )
    await steady(url)


async def steady(url: str, timeout: float = 600) -> None:
    """Wait until every worker has embedded the catalog for discovery, so no round measures that first work.

    Each worker embeds in its own background thread; a fresh connection lands on any of them, so the
    state must read `hybrid` several times in a row.
    """
    deadline = time.monotonic() + timeout
    in_a_row = 0
    while in_a_row < 8:
        if time.monotonic() > deadline:
            raise TimeoutError(f"discovery at {url} still embedding after {timeout:.0f} s")
        async with mcp_client(url) as client:
            status = result_json(await client.call_tool("jarvis_check_status", {}))
        in_a_row = in_a_row + 1 if status["discovery"]["search"] == "hybrid" else 0
        if not in_a_row:
            await asyncio.sleep(2)


BARES = ("bare SDK server (SSE, its default): ping", "bare SDK server (JSON): ping")


def main(options: argparse.Namespace) -> None:
    workers, calls, rounds = options.workers, options.calls, options.rounds
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "stdio_ping.py"
        script.write_text(STDIO_PING)
        os.environ["JARVIS_REDIS_URL"] = options.redis  # read by the jarvis processes started below
        era = options.downstream_era
        bares = {name: bare_server(name.lower(), frozen=options.frozen_bare, era=era) for name in ("SSE", "JSON")}
        with (
            bares["SSE"] as bare_sse,
            bares["JSON"] as bare_json,
            temp_jarvis("--workers", "1") as one,
            temp_jarvis("--workers", str(workers)) as many,
            PauseLog() as one_pings,
            PauseLog() as many_pings,
            ProcessPoolExecutor(options.client_processes) as pool,
        ):
            # Whose full collections to report, per case: the bare servers', and the stdio ping servers' (one per
            # worker) under each Jarvis.
            pause_logs = {f"bare {name} server": bare.pauses for name, bare in bares.items()}
            pause_logs |= {"stdio ping server, 1w": one_pings, f"stdio ping servers, {workers}w": many_pings}
            load = Load(pool, options.client_processes, options.client, options.protocol, options.seconds)
            for running, pings in ((one, one_pings), (many, many_pings)):
                asyncio.run(prepare(running.url(), script, bare_sse, pings))
            time.sleep(3)  # every worker sees the profile (they re-read the registry every 2 s)
            cases = [
                (BARES[0], bare_sse, "ping"),
                (BARES[1], bare_json, "ping"),
                *(
                    case
                    for n, running in ((1, one), (workers, many))
                    for case in (
                        (f"jarvis {n}w: proxied ping", running.url("/mcp/profile/bench"), "proxied"),
                        (f"jarvis {n}w: proxied ping (HTTP)", running.url("/mcp/profile/bench-http"), "proxied-http"),
                        (f"jarvis {n}w: jarvis_server list", running.url(), "list"),
                    )
                ),
            ]
            print(
                f"{workers} workers = one per core ({os.cpu_count()} cores); {calls} calls per client per round, "
                f"{rounds} interleaved rounds; {options.client} clients in {options.client_processes} processes, "
                f"protocol {options.protocol}; the bare servers (the HTTP-proxied case's downstream) speak "
                f"{'2026-07-28 only' if era == 'modern' else 'both eras'}"
            )
            for clients in options.clients:
                results: dict[str, list[LoadResult]] = {label: [] for label, _, _ in cases}
                pauses: dict[tuple[str, str], list[float]] = {}  # (case, server): that server's full collections
                for _ in range(rounds):
                    for label, url, kind in cases:
                        results[label].append(load.run(label, url, clients, calls, kind))
                        for name, log in pause_logs.items():
                            pauses.setdefault((label, name), []).extend(log.read())
                print(f"{clients} concurrent clients (median round by calls/s; p50/p99 over all rounds)")
                merged = {}
                for label, runs in results.items():
                    rate = statistics.median(r.per_second for r in runs)
                    lat = [x for r in runs for x in r.latencies_ms]
                    merged[label] = LoadResult(label, len(lat), sum(r.errors for r in runs), len(lat) / rate, lat)
                    print("  " + merged[label].line())
                print("  full (generation 2) collections of the SDK servers, each stopping the server it ran in:")
                for (label, name), stops in pauses.items():
                    if stops:
                        print(
                            f"    {name} during '{label}': {len(stops)}, median {statistics.median(stops):.1f} "
                            f"ms, max {max(stops):.1f} ms"
                        )
                for bare_label in BARES:
                    bare = merged[bare_label]
                    print(f"  against the {bare_label.split(':')[0]}:")
                    for n in (1, workers):
                        listed = merged[f"jarvis {n}w: jarvis_server list"]
                        proxied = merged[f"jarvis {n}w: proxied ping"]
                        over_http = merged[f"jarvis {n}w: proxied ping (HTTP)"]
                        print(
                            f"    {n}w: list calls/s / bare = {listed.per_second / bare.per_second:.2f}x; "
                            f"proxied p50 - bare p50 = {proxied.percentile(0.5) - bare.percentile(0.5):+.2f} ms "
                            f"(HTTP {over_http.percentile(0.5) - bare.percentile(0.5):+.2f}); "
                            f"proxied p99 / bare p99 = {proxied.percentile(0.99) / bare.percentile(0.99):.2f}x "
                            f"(HTTP {over_http.percentile(0.99) / bare.percentile(0.99):.2f}x); "
                            f"list p99 / bare p99 = {listed.percentile(0.99) / bare.percentile(0.99):.2f}x"
                        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--client-processes", type=int, default=1)
    parser.add_argument(
        "--client",
        choices=("replay", "wrk", "sdk"),
        default="replay",
        help="raw replay of the SDK's request (Python, or wrk), or the SDK",
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="length of a wrk round")
    parser.add_argument(
        "--frozen-bare",
        action="store_true",
        help="the bare servers freeze their start-up heap (gc.freeze), as Jarvis does: their full collections, which "
        "are their p99 and the HTTP-proxied case's, then stop them for far less, which isolates Jarvis's own tail",
    )
    parser.add_argument("--protocol", default="legacy", help="legacy (2025-11-25 sessions) or 2026-07-28")
    parser.add_argument(
        "--downstream-era",
        choices=("dual", "modern"),
        default="dual",
        help="modern: the bare servers speak 2026-07-28 only (Jarvis reaches them with server/discover); needs "
        "--protocol 2026-07-28, since a 2025 client cannot call them directly",
    )
    parser.add_argument(
        "--clients", type=lambda v: [int(c) for c in v.split(",")], default=[1, 16], help="concurrency levels"
    )
    parser.add_argument("--redis", default=os.environ.get("JARVIS_REDIS_URL") or "redis://127.0.0.1:6379/0")
    main(parser.parse_args())
