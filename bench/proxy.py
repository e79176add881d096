"""A downstream stdio server's tool called through Jarvis vs the same call made directly with the SDK client.

Same run, same server (`mcp-server-time` from PyPI), same tool and arguments. Direct: the SDK client
spawns the server and N callers share its session. Through Jarvis: N MCP sessions over streamable
HTTP to the profile surface `/mcp/profile/bench`, which proxies to one shared server process.
Prints p50/p99 of both for 1 and 16 concurrent callers and the latency Jarvis adds (target: < 2 ms
at p50), then the resident memory of Jarvis and its children with 20 installed servers, idle.

Also measured in the same run, as the floor any proxy built on the SDK's HTTP transport pays: the
SDK's own streamable-HTTP hop (its low-level server with a trivial tool, JSON answers as Jarvis
gives calls without a progress token), SDK client to SDK server, nothing behind it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from common import bare_server, mcp_client, temp_jarvis
from mcp import Client
from mcp.client.stdio import StdioServerParameters

TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")
ARGS = {"source_timezone": "UTC", "time": "12:30", "target_timezone": "Asia/Tokyo"}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def timed_calls(clients: list[Any], tool: str, calls: int, args: dict[str, Any] = ARGS) -> list[float]:
    """Each client makes `calls` sequential calls, all clients at once; per-call latency in ms."""
    latencies: list[float] = []

    async def one(client: Any) -> None:
        for _ in range(calls):
            started = time.perf_counter()
            result = await client.call_tool(tool, args)
            latencies.append((time.perf_counter() - started) * 1000)
            assert not result.is_error, result

    await asyncio.gather(*(one(c) for c in clients))
    return latencies


async def direct(concurrency: int, calls: int) -> list[float]:
    async with Client(StdioServerParameters(command=TIME_SERVER), mode="legacy") as client:
        await timed_calls([client], "convert_time", 50)  # warm up
        return await timed_calls([client] * concurrency, "convert_time", calls)


async def through_jarvis(url: str, concurrency: int, calls: int) -> list[float]:
    async with Sessions(url, concurrency) as clients:
        await timed_calls(clients, "clock__convert_time", 20)  # warm up
        return await timed_calls(clients, "clock__convert_time", calls)


async def sdk_http_hop(concurrency: int, calls: int) -> list[float]:
    with bare_server("json") as url:
        async with Sessions(url, concurrency) as clients:
            await timed_calls(clients, "ping", 20, {})
            return await timed_calls(clients, "ping", calls, {})


class Sessions:
    """`concurrency` open MCP sessions to `url`."""

    def __init__(self, url: str, concurrency: int) -> None:
        self.url, self.concurrency, self._managers = url, concurrency, [mcp_client(url) for _ in range(concurrency)]

    async def __aenter__(self) -> list[Any]:
        return [await m.__aenter__() for m in self._managers]

    async def __aexit__(self, *exc: object) -> None:
        for manager in reversed(self._managers):
            await manager.__aexit__(None, None, None)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def descendants(pid: int) -> list[int]:
    found, queue = [], [pid]
    while queue:
        parent = queue.pop()
        for task in Path(f"/proc/{parent}/task").iterdir():
            children = (task / "children").read_text().split()
            found += [int(c) for c in children]
            queue += [int(c) for c in children]
    return found


def memory_line(label: str, pid: int) -> str:
    kids = descendants(pid)
    own, total = rss_kib(pid), rss_kib(pid) + sum(rss_kib(k) for k in kids)
    return f"  {label:<50} jarvis {own / 1024:7.1f} MiB   with {len(kids):>2} children {total / 1024:8.1f} MiB"


async def main(calls: int, idle_servers: int, rounds: int) -> None:
    with temp_jarvis() as jarvis:
        async with mcp_client(jarvis.url()) as admin:
            await admin.call_tool(
                "jarvis_server", {"action": "create", "name": "clock", "type": "stdio", "command": TIME_SERVER}
            )
            await admin.call_tool("jarvis_profile", {"action": "create", "name": "bench", "servers": ["clock"]})
        url = jarvis.url("/mcp/profile/bench")
        print(f"convert_time of mcp-server-time, {calls} calls per caller in each of {rounds} rounds")
        print(
            f"  {'callers':>7} {'direct p50':>11} {'p99':>8} {'jarvis p50':>11} {'p99':>8} {'added p50':>10}"
            f" {'SDK HTTP hop p50':>17} {'p99':>8}"
        )
        for concurrency in (1, 16):
            ours, bare, hop = [], [], []
            for _ in range(rounds):  # interleaved, so drift in the machine's load hits all three alike
                ours += await through_jarvis(url, concurrency, calls)
                bare += await direct(concurrency, calls)
                hop += await sdk_http_hop(concurrency, calls)
            d50, d99, j50, j99 = (
                percentile(bare, 0.5),
                percentile(bare, 0.99),
                percentile(ours, 0.5),
                percentile(ours, 0.99),
            )
            print(
                f"  {concurrency:>7} {d50:9.2f} ms {d99:6.2f} ms {j50:9.2f} ms {j99:6.2f} ms {j50 - d50:8.2f} ms"
                f" {percentile(hop, 0.5):14.2f} ms {percentile(hop, 0.99):6.2f} ms"
            )
        pid = jarvis.process.pid
        print(f"resident memory, {idle_servers} installed servers (mcp-server-time), idle")
        print(memory_line("before installing", pid))
        names = [f"idle-{i:02d}" for i in range(idle_servers)]
        async with mcp_client(jarvis.url()) as admin:
            for name in names:
                await admin.call_tool(
                    "jarvis_server", {"action": "create", "name": name, "type": "stdio", "command": TIME_SERVER}
                )
            await admin.call_tool("jarvis_profile", {"action": "create", "name": "idle", "servers": names})
        await asyncio.sleep(1)
        # Servers created by hand declare no tools: discovery starts each once to learn them.
        print(memory_line("installed (each started once to learn its tools)", pid))
        async with mcp_client(jarvis.url("/mcp/profile/idle")) as client:
            listed = await client.list_tools()  # starts every server of the profile to learn its tools
        await asyncio.sleep(1)
        print(memory_line(f"started, idle ({len(listed.tools)} tools listed)", pid))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--idle-servers", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.idle_servers, options.rounds))
