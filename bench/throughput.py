"""`jarvis_server action=list` through the aggregator vs a bare mcp-SDK server's trivial tool.

Same run, same client code: 16 concurrent MCP sessions over streamable HTTP on loopback. Rounds
alternate between the two servers (both stay up) so background load hits both alike; the median
round decides. Prints calls/s and p50/p99 latency for both, and the ratio (target: Jarvis >= bare).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics

from common import LoadResult, bare_server, mcp_client, run_load, temp_jarvis

SERVERS_TO_INSTALL = ("fetch", "git", "memory", "everything")


async def main(clients: int, calls: int, rounds: int) -> None:
    bare_rounds: list[LoadResult] = []
    jarvis_rounds: list[LoadResult] = []
    with bare_server() as bare_url, temp_jarvis() as jarvis:
        async with mcp_client(jarvis.url()) as client:
            for name in SERVERS_TO_INSTALL:
                await client.call_tool("jarvis_server", {"action": "install", "name": name})
        for _ in range(rounds):
            bare_rounds.append(
                await run_load("bare SDK server: ping", bare_url, clients, calls, lambda c: c.call_tool("ping", {}))
            )
            jarvis_rounds.append(
                await run_load(
                    "jarvis: jarvis_server action=list",
                    jarvis.url(),
                    clients,
                    calls,
                    lambda c: c.call_tool("jarvis_server", {"action": "list"}),
                )
            )
    print(
        f"{clients} concurrent clients, {calls} calls each, {rounds} alternating rounds "
        f"({len(SERVERS_TO_INSTALL) + 2} servers installed in Jarvis)"
    )
    for bare, ours in zip(bare_rounds, jarvis_rounds, strict=True):
        print("  " + bare.line())
        print("  " + ours.line())
    bare_median = statistics.median(r.per_second for r in bare_rounds)
    ours_median = statistics.median(r.per_second for r in jarvis_rounds)
    print(
        f"median calls/s: bare {bare_median:.1f}, jarvis {ours_median:.1f}; "
        f"jarvis / bare = {ours_median / bare_median:.2f}x"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.clients, args.calls, args.rounds))
