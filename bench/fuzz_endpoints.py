"""Bounded fuzz of every MCP endpoint of a `jarvis up` this script starts; the count of 5xx must be zero.

    .venv/bin/python bench/fuzz_endpoints.py [--mutations N] [--seed S]

Surfaces: the default `/mcp`, `/mcp/jarvis`, `/mcp/debug`, `/mcp/orchestrator`, `/mcp/admin`, a profile and a
share of a toy downstream server (with its token and without). Cases are in
`tests/support/fuzz.py`; `tests/e2e/test_hardening.py` runs a small version of this on every CI run. Then every
form and page of the console, as the local admin signed in by the one-time link `jarvis up` prints
(`tests/support/console_fuzz.py`, which `tests/e2e/test_console.py` runs on every CI run).
Exit status 1 if any answer was 5xx or the server logged a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from common import temp_jarvis

from tests.support.console import LINK
from tests.support.console_fuzz import fuzz_console
from tests.support.fuzz import Report, downstream_surfaces, fixed_cases, fuzz, mutated_cases

SURFACES: dict[str, str | None] = {
    "/mcp": None,
    "/mcp/jarvis": None,
    "/mcp/debug": None,
    "/mcp/orchestrator": None,
    "/mcp/admin": None,
}


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
        console = fuzz_console_signed_in(running.base_url, running.log())
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
    print(f"console forms and pages: {console.line()}")
    print(f"tracebacks in the server log: {tracebacks}")
    for line in [*report.server_errors, *console.server_errors][:20]:
        print("  5xx:", line)
    return 1 if report.server_errors or console.server_errors or tracebacks else 0


def fuzz_console_signed_in(base_url: str, log: str) -> Report:
    """The console's forms and pages, signed in by the one-time link in `jarvis up`'s log."""
    import httpx2

    link = LINK.search(log)
    if link is None:
        raise SystemExit("jarvis up printed no console link: is it listening on loopback without sign-in?")
    with httpx2.Client(base_url=base_url, timeout=60) as client:
        client.get(link.group(1), follow_redirects=True)
        return fuzz_console(client, base_url)


if __name__ == "__main__":
    sys.exit(main())
