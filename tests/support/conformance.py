"""Runs the official MCP conformance suite (tools/node) against a server URL and reads its per-check results."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.downstream import CONFORMANCE, NODE

# One folder per scenario under the suite's --output-dir: server-<scenario>-<ISO timestamp with dashes>.
_SCENARIO_DIR = re.compile(r"^server-(?P<name>.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$")


@dataclass(frozen=True)
class Check:
    id: str
    status: str  # SUCCESS, FAILURE, WARNING, INFO or SKIPPED
    message: str
    details: dict[str, Any] = field(default_factory=dict)


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


CLIENT = Path(__file__).with_name("conformance_client.py")


@dataclass(frozen=True)
class ClientRun:
    """One client scenario's verdict as the suite gives it (any failed or warned check, a timeout or a client that
    exited with an error fails it), with the checks that decided it."""

    scenario: str
    passed: bool
    checks: list[Check]

    def reasons(self) -> list[str]:
        return [f"{c.status} {c.id}: {c.message}" for c in self.checks if c.status in ("FAILURE", "WARNING")]


def run_client(
    jarvis_url: str, scenario: str, workdir: Path, spec_version: str = "", timeout_ms: int = 60000
) -> ClientRun:
    """The suite's client `scenario` with Jarvis as the client under test: conformance_client.py puts the scenario's
    server behind a one-server profile of the running Jarvis at `jarvis_url` and acts as an agent on it."""
    if not CONFORMANCE.exists():
        message = "@modelcontextprotocol/conformance is missing under tools/node: run scripts/bootstrap"
        if os.environ.get("JARVIS_REQUIRE_ALL") == "1":
            pytest.fail(message)
        pytest.skip(message)
    output = Path(tempfile.mkdtemp(prefix="conformance-client-", dir=workdir))
    command = f"{sys.executable} {CLIENT}"
    args = [str(NODE), str(CONFORMANCE), "client", "--command", command, "--scenario", scenario, "-o", str(output)]
    args += ["--timeout", str(timeout_ms), *(["--spec-version", spec_version] if spec_version else [])]
    env = {**os.environ, "JARVIS_CONFORMANCE_URL": jarvis_url, "PYTHONPATH": str(Path(__file__).parents[2])}
    try:
        run = subprocess.run(
            args, capture_output=True, text=True, cwd=workdir, env=env, timeout=timeout_ms / 1000 + 60, check=False
        )
    except subprocess.TimeoutExpired:
        return ClientRun(scenario, False, [Check(scenario, "FAILURE", "the suite did not end (its server waited)")])
    found = sorted(output.rglob("checks.json"))
    assert found, f"no results for {scenario}:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    checks = [
        Check(c["id"], c["status"], c.get("errorMessage") or "", c.get("details") or {})
        for c in json.loads(found[0].read_text())
    ]
    return ClientRun(scenario, run.returncode == 0, checks)
