"""Runs the official MCP conformance suite (tools/node) against a server URL and reads its per-check results."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.downstream import CONFORMANCE, NODE

# One folder per scenario under the suite's --output-dir: server-<scenario>-<ISO timestamp with dashes>.
_SCENARIO_DIR = re.compile(r"^server-(?P<name>.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$")


@dataclass(frozen=True)
class Check:
    id: str
    status: str  # SUCCESS, FAILURE, WARNING, INFO or SKIPPED
    message: str


def run_suite(url: str, requirements: str, workdir: Path) -> dict[str, list[Check]]:
    """Scenario -> its checks, from one run of the requirement set `requirements` against `url`."""
    if not CONFORMANCE.exists():
        message = "@modelcontextprotocol/conformance is missing under tools/node: run scripts/bootstrap"
        if os.environ.get("JARVIS_REQUIRE_ALL") == "1":
            pytest.fail(message)
        pytest.skip(message)
    output = Path(tempfile.mkdtemp(prefix=f"conformance-{requirements}-", dir=workdir))
    run = subprocess.run(
        [str(NODE), str(CONFORMANCE), "server", "--url", url, "--requirements", requirements, "-o", str(output)],
        capture_output=True,
        text=True,
        cwd=workdir,
        timeout=600,
        check=False,
    )
    results: dict[str, list[Check]] = {}
    for folder in sorted(output.iterdir()):
        match = _SCENARIO_DIR.match(folder.name)
        if match and (folder / "checks.json").exists():
            checks = json.loads((folder / "checks.json").read_text())
            results[match["name"]] = [Check(c["id"], c["status"], c.get("errorMessage") or "") for c in checks]
    assert results, f"no conformance results:\n{run.stdout[-3000:]}\n{run.stderr[-2000:]}"
    return results


def counts(checks: list[Check]) -> tuple[int, int]:
    """(checks passed, checks failed), as the suite's summary counts them (warnings are neither)."""
    return sum(c.status == "SUCCESS" for c in checks), sum(c.status == "FAILURE" for c in checks)
