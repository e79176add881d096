"""The same downstream server hosted as a child process and as a container through the runtime service.

`@modelcontextprotocol/server-everything` (npm) both ways, in one `jarvis up`: as a stdio server (Node
on this host) and as a container-image server (the same Node and package in an image, run hardened by
the runtime with its stdio on a gRPC stream). One profile holds both; one caller calls `echo` on each,
interleaved in rounds. Prints p50/p99 of both and what the container path adds, then how long a
restart of each takes. Needs the test Docker engine: `scripts/dockerd`, then
`DOCKER_HOST=unix:///tmp/jarvis-docker/docker.sock .venv/bin/python bench/container_servers.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from common import mcp_client, temp_jarvis
from proxy import percentile

from tests.support.docker_env import docker_client
from tests.support.downstream import everything_server
from tests.support.everything_image import everything_image


async def echo_latencies(client: Any, tool: str, calls: int) -> list[float]:
    latencies = []
    for _ in range(calls):
        started = time.perf_counter()
        result = await client.call_tool(tool, {"message": "bench"})
        latencies.append((time.perf_counter() - started) * 1000)
        assert not result.is_error, result
    return latencies


async def start_seconds(admin: Any, server: str) -> float:
    """How long `jarvis_profile action=restart` takes for a profile of `server` alone: stop, then start
    (process or container), initialize and list tools."""
    started = time.perf_counter()
    await admin.call_tool("jarvis_profile", {"action": "restart", "name": f"only-{server}"})
    return time.perf_counter() - started


async def main(calls: int, rounds: int) -> None:
    image = everything_image(docker_client())
    node, script, mode = everything_server()
    with temp_jarvis() as jarvis:
        async with mcp_client(jarvis.url()) as admin:
            await admin.call_tool(
                "jarvis_server",
                {"action": "create", "name": "ev-stdio", "type": "stdio", "command": node, "args": [script, mode]},
            )
            await admin.call_tool(
                "jarvis_server", {"action": "create", "name": "ev-box", "type": "container", "image": image}
            )
            await admin.call_tool(
                "jarvis_profile", {"action": "create", "name": "both", "servers": ["ev-stdio", "ev-box"]}
            )
            for server in ("ev-stdio", "ev-box"):
                await admin.call_tool(
                    "jarvis_profile", {"action": "create", "name": f"only-{server}", "servers": [server]}
                )
            async with mcp_client(jarvis.url("/mcp/profile/both")) as client:
                await client.list_tools()
                stdio: list[float] = []
                boxed: list[float] = []
                for _ in range(rounds):
                    stdio += await echo_latencies(client, "ev-stdio__echo", calls)
                    boxed += await echo_latencies(client, "ev-box__echo", calls)
                print(f"echo of server-everything through a profile, 1 caller, {calls} calls x {rounds} rounds")
                s50, s99, b50, b99 = (
                    percentile(stdio, 0.5),
                    percentile(stdio, 0.99),
                    percentile(boxed, 0.5),
                    percentile(boxed, 0.99),
                )
                print(f"  child process   p50 {s50:6.2f} ms   p99 {s99:6.2f} ms")
                print(f"  container       p50 {b50:6.2f} ms   p99 {b99:6.2f} ms   added p50 {b50 - s50:5.2f} ms")
            for server in ("ev-stdio", "ev-box"):
                seconds = [await start_seconds(admin, server) for _ in range(3)]
                print(
                    f"  restart (stop, start, initialize, list tools), {server:<9} "
                    f"median of 3 {sorted(seconds)[1]:5.2f} s"
                )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.rounds))
