"""`run_test_task`: run pytest on a path inside the project and report failures as data.

pytest runs as `python -m pytest` with an argv list (never a shell). It stays in the server's
process group, so stopping the server stops a test run too; a timeout kills pytest and every
process it started (found through `/proc`). Its report is pytest's built-in JUnit XML
(`--junitxml`, `junit_family=xunit1` for file and line numbers), so no plugin is needed; the
XML is parsed into the structured report, and `reporter="tap"` adds the same results as TAP 13.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET  # parses the report of the pytest run started below
from pathlib import Path
from typing import Any

from project_mcp_server.config import ServerConfig, resolve_inside
from project_mcp_server.tools.base import InvalidParams, ToolDef, ToolError, builtin

MAX_DETAIL = 4000
MAX_OUTPUT = 4000


def _target(config: ServerConfig, test_path: str) -> str:
    """The pytest argument: an absolute path inside the project, plus any `::node` suffix.

    Absolute, so an argument such as `-p evil` can never be read as a pytest option.
    """
    file_part, sep, node = test_path.partition("::")
    try:
        resolved = resolve_inside(config.root, file_part or ".")
    except ValueError as exc:
        raise InvalidParams(f"test_path {exc}") from None
    if not resolved.exists():
        raise InvalidParams(f"test_path '{file_part}' does not exist in the project")
    return f"{resolved}{sep}{node}"


def _descendants(root: int) -> list[int]:
    """Every process below `root`, from the parent ids in /proc/*/stat."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue  # gone already
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [root]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def _run_pytest(config: ServerConfig, target: str, report: Path) -> tuple[int, str]:
    argv = [
        sys.executable,
        "-m",
        "pytest",
        target,
        f"--junitxml={report}",
        "-o",
        "junit_family=xunit1",
        f"--rootdir={config.root}",
        "-p",
        "no:cacheprovider",
        "-q",
        "--color=no",
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    with subprocess.Popen(  # noqa: S603 - fixed argv, no shell
        argv,
        cwd=config.root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    ) as proc:
        try:
            output, _ = proc.communicate(timeout=config.test_timeout_seconds)
        except subprocess.TimeoutExpired:
            for pid in [*_descendants(proc.pid), proc.pid]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            proc.communicate()
            raise ToolError(f"pytest did not finish within {config.test_timeout_seconds:g} s") from None
    return proc.returncode, output.decode(errors="replace")


def _node_id(file: str, classname: str, name: str) -> str:
    """pytest's node id (`tests/test_api.py::TestLogin::test_ok`) from JUnit's attributes."""
    if not file:
        return f"{classname}::{name}" if classname else name
    module = file.removesuffix(".py").replace("/", ".")
    classes = classname[len(module) + 1 :].split(".") if classname.startswith(module + ".") else []
    return "::".join([file, *classes, name])


def _case(case: ET.Element) -> dict[str, Any]:
    name = case.get("name", "")
    outcome, message, details = "passed", "", ""
    for child in case:
        if child.tag in ("failure", "error", "skipped"):
            outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
            message = child.get("message", "")
            details = (child.text or "")[-MAX_DETAIL:]
    line = case.get("line", "")
    return {
        "node_id": _node_id(case.get("file", ""), case.get("classname", ""), name),
        "file": case.get("file"),
        "line": int(line) + 1 if line.isdigit() else None,  # JUnit counts from 0
        "name": name,
        "outcome": outcome,
        "message": message,
        "details": details,
        "duration_s": float(case.get("time") or 0),
    }


def _tap(cases: list[dict[str, Any]]) -> str:
    lines = ["TAP version 13", f"1..{len(cases)}"]
    for number, case in enumerate(cases, 1):
        ok = case["outcome"] in ("passed", "skipped")
        directive = f" # SKIP {case['message']}" if case["outcome"] == "skipped" else ""
        lines.append(f"{'ok' if ok else 'not ok'} {number} - {case['node_id']}{directive}")
        if not ok:
            lines += ["  ---", f"  message: {case['message']!r}", f"  severity: {case['outcome']}", "  ..."]
    return "\n".join(lines) + "\n"


def run(config: ServerConfig, test_path: str, reporter: str) -> dict[str, Any]:
    """Run pytest on `test_path` and return the structured report."""
    target = _target(config, test_path)
    with tempfile.TemporaryDirectory(prefix="project-mcp-") as scratch:
        report = Path(scratch) / "report.xml"
        started = time.monotonic()
        exit_code, output = _run_pytest(config, target, report)
        elapsed = round(time.monotonic() - started, 3)
        if not report.exists():
            raise ToolError(f"pytest exited with {exit_code} without a report: {output[-MAX_OUTPUT:]}")
        tree = ET.parse(report)  # noqa: S314 - written by the pytest process above, not by a caller
    cases = [_case(case) for case in tree.iter("testcase")]
    counts = {k: sum(1 for c in cases if c["outcome"] == k) for k in ("passed", "failed", "error", "skipped")}
    collection_errors = sum(int(s.get("errors", "0")) for s in tree.iter("testsuite")) - counts["error"]
    result: dict[str, Any] = {
        "reporter": reporter,
        "test_path": test_path,
        "exit_code": exit_code,
        "success": exit_code == 0,
        "summary": {
            "total": len(cases),
            **counts,
            "collection_errors": max(collection_errors, 0),
            "duration_s": elapsed,
        },
        "failures": [c for c in cases if c["outcome"] in ("failed", "error")],
        "tests": [{k: c[k] for k in ("node_id", "outcome", "duration_s")} for c in cases],
    }
    if exit_code not in (0, 1):  # collection errors, usage errors, no tests: pytest's own words help
        result["output_tail"] = output[-MAX_OUTPUT:]
    if reporter == "tap":
        result["tap"] = _tap(cases)
    return result


def tool(config: ServerConfig) -> ToolDef:
    """The `run_test_task` tool for this project."""
    return builtin("run_test_task", lambda args: run(config, args["test_path"], args["reporter"]), read_only=False)
