"""Bounded fuzz of every MCP endpoint of a `jarvis up` this script starts; the count of 5xx must be zero.

    .venv/bin/python bench/fuzz_endpoints.py [--mutations N] [--seed S]

Surfaces: the default `/mcp`, `/mcp/jarvis`, `/mcp/debug`, `/mcp/orchestrator`, a profile and a
share of a toy downstream server (with its token and without). Cases are in
`tests/support/fuzz.py`; `tests/e2e/test_hardening.py` runs a small version of this on every CI run.
Exit status 1 if any answer was 5xx or the server logged a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from common import temp_jarvis

from tests.support.fuzz import Report, downstream_surfaces, fixed_cases, fuzz, mutated_cases

SURFACES: dict[str, str | None] = {"/mcp": None, "/mcp/jarvis": None, "/mcp/debug": None, "/mcp/orchestrator": None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutations", type=int, default=300, help="mutated requests per surface")
    parser.add_argument("--seed", type=int, default=15)
    options = parser.parse_args()
    cases = fixed_cases() + mutated_cases(options.mutations, options.seed)
    with temp_jarvis() as running:
        surfaces = {**SURFACES, **asyncio.run(downstream_surfaces(running.url(), running.base_url))}
        started = time.perf_counter()
        report = fuzz(running.base_url, surfaces, cases, Report())
        seconds = time.perf_counter() - started
        # The same number of well-formed pings, for scale: what a request costs when nothing is wrong.
        baseline = time.perf_counter()
        import httpx2

        with httpx2.Client(timeout=30) as client:
            for _ in range(report.requests):
                client.get(running.base_url + "/healthz")
        base_seconds = time.perf_counter() - baseline
        tracebacks = running.log().count("Traceback")
    print(f"fuzz of {len(surfaces)} surfaces x {len(cases)} cases: {report.line()}")
    print(
        f"fuzz requests: {report.requests / seconds:8.1f} /s   baseline /healthz: "
        f"{report.requests / base_seconds:8.1f} /s (same run)"
    )
    print(f"tracebacks in the server log: {tracebacks}")
    for line in report.server_errors[:20]:
        print("  5xx:", line)
    return 1 if report.server_errors or tracebacks else 0


if __name__ == "__main__":
    sys.exit(main())
