"""How fast the `jarvis` command answers, beside `git --version` measured in the same run (issue 46 item 2).

Targets, on a quiet machine: `jarvis --help`, `status`, `token list` and `client list` at most 1 s each, and
`jarvis up` answering /livez within 5 s. Each round runs every command once, in a new random order, so
background load hits them alike; every figure is the median (p50) and p90 over the rounds, of the wall time and
of the CPU time (user + system) the process used. On a busy machine the wall time is mostly waiting for a core,
and the CPU time is what the command itself costs: about what the wall time would be on a quiet machine.

The read-only commands run twice over: on a data dir nobody serves (the command opens it itself) and beside a
`jarvis up` serving it (the command asks that Jarvis's registry). `--before DIR` runs the same commands with the
code of another checkout (e.g. `git worktree add /tmp/before <commit>`) on the same venv, for a before/after table.

Bytecode is cached as in any install (in a cache dir of the run when PYTHONDONTWRITEBYTECODE is set), after one
warm-up round; HOME is a temporary directory, so the machine's own client configs play no part.

    .venv/bin/python bench/cli_speed.py [--rounds 15] [--up-rounds 5] [--before DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
JARVIS = str(Path(sys.executable).parent / "jarvis")
READ_ONLY = (["--help"], ["status"], ["token", "list"], ["client", "list"])
TARGET_SECONDS = 1.0
UP_TARGET_SECONDS = 5.0
SOURCE_ROOTS = ("src", "aggregator/src", "protos/src", "libs/*/src", "services/*/src")
RUN_CLI = "import sys; from jarvis.cli.main import cli; sys.exit(cli())"  # what the `jarvis` script runs


@dataclass
class Figures:
    label: str
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    @staticmethod
    def p90(values: list[float]) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]

    def row(self, git: Figures | None, target: float | None) -> str:
        wall50, cpu50 = statistics.median(self.wall), statistics.median(self.cpu)
        ratio = f"{wall50 / statistics.median(git.wall):.0f}x" if git is not None else ""
        goal = "" if target is None else f"{target:g} s: {'met' if cpu50 <= target else 'MISSED'}"
        cells = [self.label, f"{wall50:.3f}", f"{self.p90(self.wall):.3f}", f"{cpu50:.3f}", f"{self.p90(self.cpu):.3f}"]
        return "| " + " | ".join([*cells, ratio, goal]) + " |"


HEADER = (
    "| command | wall p50 | wall p90 | CPU p50 | CPU p90 | wall / git's | target (CPU p50) |\n"
    "|---|--:|--:|--:|--:|--:|---|"
)


def run_once(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of `command` (its output thrown away)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False, timeout=300)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def source_path(checkout: Path) -> str:
    roots = [p for pattern in SOURCE_ROOTS for p in sorted(checkout.glob(pattern)) if p.is_dir()]
    return os.pathsep.join(str(p) for p in roots)


@dataclass
class Variant:
    """One way of running `jarvis`: this checkout's script, or another checkout's code on the same venv."""

    name: str
    launcher: list[str]
    env: dict[str, str]


def rounds(commands: dict[str, tuple[list[str], dict[str, str]]], count: int) -> dict[str, Figures]:
    figures = {label: Figures(label) for label in commands}
    for command, env in commands.values():  # warm-up: bytecode compiled, schema made
        run_once(command, env)
    for n in range(count):
        order = list(commands)
        random.shuffle(order)
        for label in order:
            wall, cpu = run_once(*commands[label])
            figures[label].wall.append(wall)
            figures[label].cpu.append(cpu)
        print(f"  round {n + 1}/{count}", file=sys.stderr, end="\r")
    print(file=sys.stderr)
    return figures


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_up(variant: Variant, data_dir: Path, log: Path) -> tuple[subprocess.Popen[bytes], int, float, float]:
    """`jarvis up`: the process, its port, the seconds until /livez answered, and its main thread's CPU by then."""
    port = free_port()
    command = [*variant.launcher, "--data-dir", str(data_dir), "up", "--port", str(port)]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=log.open("ab"), stderr=subprocess.STDOUT, env=variant.env)
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"jarvis up exited with {process.returncode}; see {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/livez", timeout=1) as answer:
                if answer.status == 200:
                    break
        except OSError:
            time.sleep(0.02)
        if time.perf_counter() - started > 300:
            process.kill()
            raise RuntimeError(f"jarvis up did not answer /livez in 300 s; see {log}")
    seconds = time.perf_counter() - started
    stat = Path(f"/proc/{process.pid}/task/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
    return process, port, seconds, cpu


def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGINT)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def up_rounds(variant: Variant, data_dir: Path, log: Path, count: int) -> Figures:
    figures = Figures(f"{variant.name}jarvis up: /livez answers")
    if count <= 0:
        return figures
    stop(start_up(variant, data_dir, log)[0])  # the first start makes the schema and the model's graph
    for _ in range(count):
        process, _, seconds, cpu = start_up(variant, data_dir, log)
        stop(process)
        figures.wall.append(seconds)
        figures.cpu.append(cpu)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--up-rounds", type=int, default=5, help="starts of `jarvis up` timed (0: none)")
    parser.add_argument("--before", type=Path, help="another checkout whose code runs beside this one's")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="jarvis-cli-speed-"))
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("JARVIS_") and k != "PYTHONDONTWRITEBYTECODE"}
    from jarvis.aggregator.discovery.embedding import model_cache  # the built graph, shared with the tests

    base_env.update(
        HOME=str(work / "home"),
        PYTHONPYCACHEPREFIX=os.environ.get("PYTHONPYCACHEPREFIX", str(work / "pycache")),
        JARVIS_MODEL_CACHE=str(model_cache()),
        JARVIS_LOG_LEVEL="WARNING",
    )
    (work / "home").mkdir()
    variants = [Variant("", [JARVIS], base_env)]
    if args.before is not None:
        before_env = {**base_env, "PYTHONPATH": source_path(args.before.resolve())}
        variants.append(Variant("before: ", [sys.executable, "-c", RUN_CLI], before_env))
    git = ["git", "--version"]

    def commands(data_dir: Path, suffix: str) -> dict[str, tuple[list[str], dict[str, str]]]:
        found: dict[str, tuple[list[str], dict[str, str]]] = {"git --version": (git, base_env)}
        for variant in variants:
            for command in READ_ONLY:
                label = f"{variant.name}jarvis {' '.join(command)}{'' if command == ['--help'] else suffix}"
                found[label] = ([*variant.launcher, "--data-dir", str(data_dir), *command], variant.env)
        return found

    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the start")
    alone = rounds(commands(work / "data", ""), args.rounds)
    served_dir = work / "served"
    serving = start_up(variants[0], served_dir, work / "up.log")[0]
    try:
        beside = rounds(
            {k: v for k, v in commands(served_dir, " (beside jarvis up)").items() if "--help" not in k}, args.rounds
        )
    finally:
        stop(serving)
    up = [up_rounds(v, work / f"up-{n}", work / "up.log", args.up_rounds) for n, v in enumerate(variants)]
    load = os.getloadavg()
    print(f"machine: load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the end")

    print(f"\n{args.rounds} rounds; seconds; the target is checked against the CPU p50\n")
    print(HEADER)
    for phase in (alone, beside):
        git_figures = phase.pop("git --version")
        print(git_figures.row(None, None))
        for label, figures in phase.items():
            print(figures.row(git_figures, None if label.startswith("before: ") else TARGET_SECONDS))
    if args.up_rounds:
        print(
            f"\n`jarvis up` on a warm data dir, {args.up_rounds} starts; CPU: its main thread's when /livez answered\n"
        )
        print(HEADER)
        for figures in up:
            print(figures.row(None, None if figures.label.startswith("before: ") else UP_TARGET_SECONDS))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
