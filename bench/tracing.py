"""What traces cost (issue 50): a proxied tool call and `jarvis_server action=list` through three `jarvis up`s
at once, tracing off, on at 10 % sampling and on at 100 %, beside the same server called directly.

Same run, same server (`mcp-server-time`), the three taking turns every few calls, in an order that rotates, so drift
in the machine's speed hits every Jarvis alike. The traced ones export to a real OTLP/HTTP receiver
(tests/support/otlp_receiver.py) in a process of its own, which counts what it received. Targets: off within noise
of a Jarvis without this code; 100 % adds at most 10 % to the p50.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from call_pipeline import cpu_seconds, jarvis_pids
from proxy import ARGS, TIME_SERVER, direct, percentile, timed_calls

from tests.support.stack import RunningJarvis, mcp_client, start_jarvis

# After a `list` load, a traced Jarvis still exports that load's spans for up to the batch processor's delay (5 s by
# default); the next proxied calls, on any of the three, would share the 2 cores with that export. Each phase starts
# once the last one's spans have left, so a proxied call's figure is its own cost, not the previous load's.
SETTLE_SECONDS = 6.0
BLOCK = 10  # proxied calls a mode makes before the next mode's turn
MODES = {
    "off": {},
    "on, 10 %": {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1"},
    "on, 100 %": {"OTEL_TRACES_SAMPLER": "always_on"},
}


async def prepare(jarvis: RunningJarvis) -> None:
    async with mcp_client(jarvis.url()) as admin:
        await admin.call_tool(
            "jarvis_server", {"action": "create", "name": "clock", "type": "stdio", "command": TIME_SERVER}
        )
        await admin.call_tool("jarvis_profile", {"action": "create", "name": "bench", "servers": ["clock"]})


async def quiet(jarvis: RunningJarvis, idle: float = 0.02, longest: float = 120.0) -> None:
    """Wait until `jarvis` is idle (under `idle` of a core for a second): what installing the server set off in the
    background (discovery embeds the new tools) would otherwise land in one mode's measured calls and not another's."""
    pids = jarvis_pids(jarvis)
    deadline = time.monotonic() + longest
    while time.monotonic() < deadline:
        before = cpu_seconds(pids)
        await asyncio.sleep(1.0)
        if cpu_seconds(pids) - before < idle:
            return


async def lists_per_second(jarvis: RunningJarvis, clients: int, calls: int) -> float:
    async def one() -> None:
        async with mcp_client(jarvis.url()) as client:
            for _ in range(calls):
                result = await client.call_tool("jarvis_server", {"action": "list"})
                assert not result.is_error, result

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(clients)))
    return clients * calls / (time.perf_counter() - started)


def rotated(turn: int) -> list[str]:
    """The modes, starting at the `turn`th: each takes each place alike."""
    modes = list(MODES)
    return modes[turn % len(modes) :] + modes[: turn % len(modes)]


async def started(receiver_url: str, stack: ExitStack) -> dict[str, RunningJarvis]:
    """One `jarvis up` per mode, each with the server installed, once all of them are idle."""
    jarvises: dict[str, RunningJarvis] = {}
    for mode, sampling in MODES.items():
        home = stack.enter_context(tempfile.TemporaryDirectory())
        env: dict[str, Any] = {"HOME": home, **sampling}
        if sampling:
            env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver_url
        jarvises[mode] = start_jarvis(Path(home) / "data", env=env, timeout=180)
        stack.callback(jarvises[mode].stop)
        await prepare(jarvises[mode])
    for jarvis in jarvises.values():
        await quiet(jarvis)
    return jarvises


async def main(receiver_url: str, calls: int, rounds: int, list_clients: int) -> None:
    latencies: dict[str, list[float]] = {mode: [] for mode in [*MODES, "direct"]}
    rates: dict[str, list[float]] = {mode: [] for mode in MODES}
    # The CPU each Jarvis spent on its proxied calls (its process, not the server's): steadier than latency on a
    # shared 2-core machine, where a neighbour's burst moves a p50 by a fifth.
    cpu: dict[str, float] = dict.fromkeys(MODES, 0.0)
    with ExitStack() as stack:
        jarvises = await started(receiver_url, stack)
        pids = {mode: jarvis_pids(jarvis) for mode, jarvis in jarvises.items()}
        async with AsyncExitStack() as open_clients:
            clients = {
                mode: await open_clients.enter_async_context(mcp_client(jarvis.url("/mcp/profile/bench")))
                for mode, jarvis in jarvises.items()
            }
            for client in clients.values():
                await timed_calls([client], "clock__convert_time", 20)  # warm up
            for round_ in range(rounds):
                latencies["direct"] += await direct(1, calls)
                # The modes take turns every BLOCK calls, in an order that rotates: this machine's speed drifts by a
                # fifth within seconds, and modes timed in phases of their own (a round's calls at once) moved by as
                # much with their place in the round, whichever mode was there.
                for block in range(calls // BLOCK):
                    for mode in rotated(block):
                        before = cpu_seconds(pids[mode])
                        latencies[mode] += await timed_calls([clients[mode]], "clock__convert_time", BLOCK, ARGS)
                        cpu[mode] += cpu_seconds(pids[mode]) - before
                for mode in rotated(round_):
                    await asyncio.sleep(SETTLE_SECONDS)  # the last spans leave before each list load
                    rates[mode].append(await lists_per_second(jarvises[mode], list_clients, calls // 4))
    report(calls, rounds, list_clients, latencies, rates, cpu)


def report(
    calls: int,
    rounds: int,
    list_clients: int,
    latencies: dict[str, list[float]],
    rates: dict[str, list[float]],
    cpu: dict[str, float],
) -> None:
    timed = rounds * (calls // BLOCK) * BLOCK
    print(f"convert_time of mcp-server-time, 1 caller, {timed} calls a mode in turns of {BLOCK};")
    print(f"jarvis_server action=list, {list_clients} callers")
    print(f"  {'':<10} {'p50':>9} {'p99':>9} {'p50 vs off':>11} {'list/s':>8} {'CPU/call':>9} {'vs off':>7}")
    base = percentile(latencies["off"], 0.5)
    for mode in ["direct", *MODES]:
        p50, p99 = percentile(latencies[mode], 0.5), percentile(latencies[mode], 0.99)
        rate = f"{sorted(rates[mode])[len(rates[mode]) // 2]:8.1f}" if mode in rates else f"{'':>8}"
        per_call = f"{1000 * cpu[mode] / timed:6.2f} ms" if mode in cpu else ""
        versus = f"{100 * (cpu[mode] / cpu['off'] - 1):+6.1f}%" if mode in cpu else ""
        latency = f"{p50:6.2f} ms {p99:6.2f} ms {100 * (p50 / base - 1):+10.1f}%"
        print(f"  {mode:<10} {latency} {rate} {per_call:>9} {versus}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--clients", type=int, default=8)
    options = parser.parse_args()
    receiving = subprocess.Popen(
        [sys.executable, "-m", "tests.support.otlp_receiver"],
        cwd=Path(__file__).resolve().parents[1],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert receiving.stdout is not None
    url = receiving.stdout.readline().strip()
    asyncio.run(main(url, options.calls, options.rounds, options.clients))
    print(f"spans the receiver got: {receiving.communicate('')[0].strip()}")
