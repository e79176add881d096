"""The call pipeline (issue 45, decision 0065) against the code before it, in one run: bench/workers.py's cases for
two source trees side by side.

Each tree (a `git worktree` checkout, e.g. the commit before the pipeline and the one after) runs its own
`jarvis up --workers 1` and `--workers 2`, from its own sources (PYTHONPATH puts the tree's packages before the
venv's editable installs; the workers inherit it), with its own Redis database. One round runs every case once: the
bare SDK server (SSE answers, its default; also the HTTP-proxied case's downstream), then the stdio-proxied `ping`,
the HTTP-proxied `ping` and `jarvis_server action=list` with 1 and with 2 workers, each case of every tree back to
back, the trees' order alternating from round to round: drift in the machine's load hits the pair compared alike.
The clients are bench/replay.py's (or wrk), as in bench/workers.py.

Printed, per round and over all rounds: at 1 client, proxied p50 minus the bare server's p50 of the same round (the
target: at most +0.5 ms, and no worse than before); at 16 clients, `list` calls/s with 2 workers and its ratio to the
bare server of the same round (no lower than before). The last column compares the last tree with the first round by
round (the median of each round's difference or ratio), which the machine's drift between rounds does not move. Last,
the CPU each Jarvis (its main process and workers, not the servers behind it) used per call, which a busy machine's
scheduling moves far less than latency: with the replay client, from the first call of the warm-up to the last call,
the sessions already open (the Jarvis's own background work in that time is in it too); with the others, over the
whole case, sessions opened and closed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import AsyncExitStack, ExitStack
from dataclasses import dataclass
from pathlib import Path

from common import LoadResult, PauseLog, RunningJarvis, bare_server, start_jarvis
from replay import captured_call, replay
from workers import CALLS, STDIO_PING, Load, prepare

from tests.support.redis_server import RedisServer

SOURCE_DIRS = ("src", "aggregator/src", "protos/src", "libs/*/src", "services/*/src")
KINDS = (("proxied", "/mcp/profile/bench"), ("proxied-http", "/mcp/profile/bench-http"), ("list", "/mcp/jarvis"))
BARE = "bare SSE"


@dataclass(frozen=True)
class Tree:
    name: str
    path: Path

    def pythonpath(self) -> str:
        return os.pathsep.join(str(p) for pattern in SOURCE_DIRS for p in sorted(self.path.glob(pattern)))

    def describe(self) -> str:
        """The tree's commit and where its `jarvis.aggregator` is imported from, as a Jarvis of it would."""
        commit = subprocess.run(
            ["git", "-C", str(self.path), "log", "-1", "--format=%h %s"], capture_output=True, text=True, check=True
        ).stdout.strip()
        probe = (
            "import jarvis.aggregator as a, importlib.util as u; "
            "print(a.__path__[0], bool(u.find_spec('jarvis.aggregator.calls')))"
        )
        found = subprocess.run(
            [sys.executable, "-c", probe],
            env={**os.environ, "PYTHONPATH": self.pythonpath()},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        return f"{self.name}: {commit[:90]}\n    jarvis.aggregator from {found[0]} (calls/ package: {found[1]})"


def parse_tree(value: str) -> Tree:
    name, _, path = value.partition("=")
    if not path or not (Path(path) / "aggregator" / "src").is_dir():
        raise argparse.ArgumentTypeError(f"{value!r}: NAME=PATH of a checkout of this repository")
    return Tree(name, Path(path).resolve())


def start(tree: Tree, tmp: Path, workers: int, redis: str) -> RunningJarvis:
    home = tmp / f"{tree.name}-{workers}w"
    env = {"HOME": str(home), "PYTHONPATH": tree.pythonpath(), "JARVIS_REDIS_URL": redis}
    return start_jarvis(home / "data", "--workers", str(workers), env=env, timeout=300)


def label(tree: str, workers: int, kind: str) -> str:
    return f"{tree} {workers}w {kind}"


def jarvis_pids(running: RunningJarvis) -> list[int]:
    """`jarvis up`'s process and its workers (not the servers it runs)."""
    found, queue = [running.process.pid], [running.process.pid]
    while queue:
        for task in Path(f"/proc/{queue.pop()}/task").iterdir():
            for child in map(int, (task / "children").read_text().split()):
                queue.append(child)
                if b"jarvis.cli.worker" in Path(f"/proc/{child}/cmdline").read_bytes():
                    found.append(child)
    return found


TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU the processes have used, their exited threads' included (a process gone counts none)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of stat(5)
    return total / TICKS


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions an exception group holds, however deep (16 sessions nest them past what a traceback shows)."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


WARMUP = 10  # calls each replayed client makes before it is timed (bench/replay.py)


def _replayed(
    url: str, clients: int, calls: int, kind: str, mode: str, pids: list[int]
) -> tuple[list[float], float, int, float]:
    """bench/workers.py's replayed case, in a process of the pool, with the CPU `pids` used while the calls (the
    warm-up's too) were sent: the sessions' set-up is not in it."""

    async def run() -> tuple[list[float], float, int, float]:
        tool, arguments = CALLS[kind]
        async with AsyncExitStack() as sessions:
            captured = [
                await sessions.enter_async_context(captured_call(url, tool, arguments, mode)) for _ in range(clients)
            ]
            before = cpu_seconds(pids)
            latencies, seconds, errors = await replay(captured, calls, WARMUP)
            return latencies, seconds, errors, cpu_seconds(pids) - before

    try:
        return asyncio.run(run())
    except Exception as error:  # told to the parent process with what it held, however deep
        raise RuntimeError("; ".join(f"{type(e).__name__}: {e}" for e in leaves(error))) from None


def p50(result: LoadResult) -> float:
    return result.percentile(0.5)


def main(options: argparse.Namespace) -> None:
    trees: list[Tree] = options.tree
    for tree in trees:
        print(tree.describe())
    with tempfile.TemporaryDirectory() as name, ExitStack() as stack:
        tmp = Path(name)
        script = tmp / "stdio_ping.py"
        script.write_text(STDIO_PING)
        redis = RedisServer(tmp / "redis")
        redis.start()
        stack.callback(redis.stop)
        bare_url = stack.enter_context(bare_server("sse"))
        urls: dict[tuple[str, int], str] = {}
        started: dict[tuple[str, int], RunningJarvis] = {}
        for index, (tree, workers) in enumerate((t, w) for t in trees for w in (1, 2)):
            running = start(tree, tmp, workers, f"redis://127.0.0.1:{redis.port}/{index}")
            stack.callback(running.stop)
            pings = stack.enter_context(PauseLog())
            asyncio.run(prepare(running.url(), script, bare_url, pings))
            urls[(tree.name, workers)] = running.base_url
            started[(tree.name, workers)] = running
        time.sleep(3)  # every worker sees the profiles (they re-read the registry every 2 s)
        jarvises = {label(t, w, kind): running for (t, w), running in started.items() for kind, _ in KINDS}
        pool = stack.enter_context(ProcessPoolExecutor(1))
        load = Load(pool, 1, options.client, options.protocol, options.seconds)
        print(
            f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start; {options.rounds} rounds, "
            f"the trees' order alternating; {options.client} clients, protocol {options.protocol}"
        )
        for clients in options.clients:
            calls = options.calls_one if clients == 1 else options.calls_many
            runs: dict[str, list[LoadResult]] = {}
            cpu: dict[str, list[float]] = {}  # each run's CPU seconds of the case's Jarvis (main process and workers)
            for round_ in range(options.rounds):
                order = trees if round_ % 2 == 0 else trees[::-1]
                cases = [(BARE, bare_url, "ping")]
                cases += [  # each case of the trees back to back, so the pair compared shares the machine's state
                    (label(t.name, w, kind), urls[(t.name, w)] + path, kind)
                    for w in (1, 2)
                    for kind, path in KINDS
                    for t in order
                ]
                for case, url, kind in cases:
                    serving = jarvises.get(case)
                    for attempt in (1, 2, 3):
                        pids = jarvis_pids(serving) if serving is not None else []  # a worker may have restarted
                        try:
                            if options.client == "replay":  # CPU while the calls are replayed, sessions open
                                submitted = pool.submit(_replayed, url, clients, calls, kind, options.protocol, pids)
                                latencies, seconds, errors, used = submitted.result()
                                result = LoadResult(case, len(latencies), errors, seconds, latencies)
                            else:  # CPU of the whole case, sessions opened and closed
                                used = cpu_seconds(pids)
                                result = load.run(case, url, clients, calls, kind)
                                used = cpu_seconds(pids) - used
                            break
                        except Exception as error:
                            print(f"  ! '{case}' failed in round {round_ + 1} (attempt {attempt}): {error}")
                            if serving is not None:
                                alive = "running" if serving.process.poll() is None else "exited"
                                print(f"    its jarvis up ({alive}), last lines:\n" + serving.log()[-3000:])
                            if attempt == 3:
                                raise
                    runs.setdefault(case, []).append(result)
                    cpu.setdefault(case, []).append(used / (clients * (calls + WARMUP)))
                report_round(clients, round_, trees, runs)
            report(clients, trees, runs, cpu)


def report_round(clients: int, round_: int, trees: list[Tree], runs: dict[str, list[LoadResult]]) -> None:
    bare = runs[BARE][round_]
    if clients == 1:
        figures = [
            f"{t.name} {w}w {p50(runs[label(t.name, w, 'proxied')][round_]) - p50(bare):+.2f}"
            f"/{p50(runs[label(t.name, w, 'proxied-http')][round_]) - p50(bare):+.2f}"
            for t in trees
            for w in (1, 2)
        ]
        print(f"  1 client, round {round_ + 1}: bare p50 {p50(bare):.2f} ms; proxied - bare, stdio/HTTP (ms): ", end="")
    else:
        figures = [
            f"{t.name} {runs[label(t.name, 2, 'list')][round_].per_second:.0f} "
            f"({runs[label(t.name, 2, 'list')][round_].per_second / bare.per_second:.2f}x)"
            for t in trees
        ]
        print(f"  {clients} clients, round {round_ + 1}: bare {bare.per_second:.0f} calls/s; 2w list calls/s: ", end="")
    print("; ".join(figures), flush=True)


def merged(runs: list[LoadResult]) -> LoadResult:
    """All rounds' latencies; calls/s the median round's."""
    rate = statistics.median(r.per_second for r in runs)
    latencies = [x for r in runs for x in r.latencies_ms]
    return LoadResult(runs[0].label, len(latencies), sum(r.errors for r in runs), len(latencies) / rate, latencies)


def report(clients: int, trees: list[Tree], runs: dict[str, list[LoadResult]], cpu: dict[str, list[float]]) -> None:
    print(f"{clients} concurrent client{'s' if clients > 1 else ''}: every case, all rounds")
    for results in runs.values():
        print("  " + merged(results).line())
    bare = runs[BARE]
    names = [t.name for t in trees]
    first, last = names[0], names[-1]
    print("  | figure | " + " | ".join(names) + f" | {last} against {first}, rounds' median |")
    print("  |---|" + "---:|" * (len(names) + 1))
    if clients == 1:
        for workers in (1, 2):
            for kind, words in (("proxied", "stdio"), ("proxied-http", "HTTP")):
                cells = []
                for name in names:
                    pooled = p50(merged(runs[label(name, workers, kind)])) - p50(merged(bare))
                    rounds = [p50(r) - p50(b) for r, b in zip(runs[label(name, workers, kind)], bare, strict=True)]
                    cells.append(f"{pooled:+.2f} ms (rounds' median {statistics.median(rounds):+.2f})")
                pairs = zip(runs[label(last, workers, kind)], runs[label(first, workers, kind)], strict=True)
                change = statistics.median(p50(a) - p50(b) for a, b in pairs)
                print(
                    f"  | {workers}w proxied p50 - bare p50, {words} | " + " | ".join(cells) + f" | {change:+.2f} ms |"
                )
    else:
        for workers in (1, 2):
            cells = []
            for name in names:
                rate = merged(runs[label(name, workers, "list")]).per_second
                ratios = [
                    r.per_second / b.per_second for r, b in zip(runs[label(name, workers, "list")], bare, strict=True)
                ]
                cells.append(f"{rate:.0f} calls/s ({statistics.median(ratios):.2f}x bare)")
            pairs = zip(runs[label(last, workers, "list")], runs[label(first, workers, "list")], strict=True)
            change = statistics.median(a.per_second / b.per_second for a, b in pairs)
            print(f"  | {workers}w `list` calls/s (median round) | " + " | ".join(cells) + f" | {change:.2f}x |")
        for workers in (1, 2):
            for kind, words in (("proxied", "stdio"), ("proxied-http", "HTTP")):
                rates = [merged(runs[label(n, workers, kind)]).per_second for n in names]
                pairs = zip(runs[label(last, workers, kind)], runs[label(first, workers, kind)], strict=True)
                change = statistics.median(a.per_second / b.per_second for a, b in pairs)
                print(
                    f"  | {workers}w {words}-proxied calls/s | "
                    + " | ".join(f"{r:.0f}" for r in rates)
                    + f" | {change:.2f}x |"
                )
    for workers in (1, 2):
        for kind, words in (("proxied", "stdio-proxied"), ("proxied-http", "HTTP-proxied"), ("list", "`list`")):
            per_call = [statistics.fmean(cpu[label(n, workers, kind)]) * 1e6 for n in names]
            spent = zip(cpu[label(last, workers, kind)], cpu[label(first, workers, kind)], strict=True)
            change = statistics.median(a / b for a, b in spent if b)
            print(
                f"  | {workers}w Jarvis CPU per {words} call (mean of rounds) | "
                + " | ".join(f"{us:.0f} us" for us in per_call)
                + f" | {change:.2f}x |"
            )
    print(flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tree",
        type=parse_tree,
        action="append",
        required=True,
        help="NAME=PATH: a checkout of this repository to run Jarvis from (give two: before and after)",
    )
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--calls-one", type=int, default=300, help="calls per round at 1 client")
    parser.add_argument("--calls-many", type=int, default=100, help="calls per client per round at more clients")
    parser.add_argument(
        "--clients", type=lambda v: [int(c) for c in v.split(",")], default=[1, 16], help="concurrency levels"
    )
    parser.add_argument("--client", choices=("replay", "wrk", "sdk"), default="replay")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of a wrk round")
    parser.add_argument("--protocol", default="legacy", help="legacy (2025-11-25 sessions) or 2026-07-28")
    main(parser.parse_args())
