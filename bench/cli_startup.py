"""How long `jarvis --help` takes, beside the interpreter's own start-up measured in the same run.

A person's first command, and every shell completion, pays the CLI's import time; the target (issue 37) is under
0.5 s on an idle machine. Rounds interleave the two commands, so background load hits both alike.

    .venv/bin/python bench/cli_startup.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

JARVIS = [str(Path(sys.executable).parent / "jarvis"), "--help"]
BASELINE = [sys.executable, "-c", "pass"]


def _seconds(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    rounds = parser.parse_args().rounds
    _seconds(JARVIS)  # the first run compiles bytecode: not what a person's next command pays
    jarvis, baseline = [], []
    for _ in range(rounds):
        jarvis.append(_seconds(JARVIS))
        baseline.append(_seconds(BASELINE))
    for name, times in (("python -c pass (baseline)", baseline), ("jarvis --help", jarvis)):
        ordered = sorted(times)
        p90 = ordered[max(0, int(len(ordered) * 0.9) - 1)]
        print(f"{name:<28} p50 {statistics.median(times) * 1000:7.1f} ms   p90 {p90 * 1000:7.1f} ms")
    print(
        f"jarvis --help over the interpreter: {(statistics.median(jarvis) - statistics.median(baseline)) * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
