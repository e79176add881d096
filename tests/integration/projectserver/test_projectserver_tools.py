"""run_test_task, db_bridge and capture_trace for real on the sample application."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, cast

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.support.projectserver import alive, make_project, server_parameters, wait_for_pids

pytestmark = pytest.mark.anyio


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments, read_timeout_seconds=120)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return cast(dict[str, Any], result.structured_content)  # mcp types it Any: any JSON value


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert isinstance(text, str)
    return text


# -- run_test_task ------------------------------------------------------------------------------


async def test_run_test_task_reports_the_failure_as_data(client: Client) -> None:
    report = await call(client, "run_test_task", test_path="tests", reporter="json")
    assert report["success"] is False
    assert report["exit_code"] == 1
    assert {k: report["summary"][k] for k in ("total", "passed", "failed", "error", "skipped")} == {
        "total": 2,
        "passed": 1,
        "failed": 1,
        "error": 0,
        "skipped": 0,
    }
    [failure] = report["failures"]
    assert failure["node_id"] == "tests/check_sample.py::test_fail"
    assert failure["file"] == "tests/check_sample.py"
    assert failure["line"] == 8
    assert "math is broken" in failure["message"]
    assert "assert (1 + 1) == 3" in failure["details"]
    assert "tap" not in report


async def test_run_test_task_tap_and_node_selection(client: Client) -> None:
    tap = await call(client, "run_test_task", test_path="tests/check_sample.py", reporter="tap")
    lines = tap["tap"].splitlines()
    assert lines[:2] == ["TAP version 13", "1..2"]
    assert "ok 1 - tests/check_sample.py::test_pass" in lines
    assert "not ok 2 - tests/check_sample.py::test_fail" in lines
    one = await call(client, "run_test_task", test_path="tests/check_sample.py::test_pass", reporter="json")
    assert one["success"] is True
    assert one["summary"]["total"] == 1


async def test_run_test_task_runs_the_generated_servers_own_checks(client: Client) -> None:
    """The scaffolded mcp-server/tests (manifest sync, read-only rules) pass in the generated project."""
    report = await call(client, "run_test_task", test_path="mcp-server/tests", reporter="json")
    assert report["success"] is True, report["failures"]
    assert report["summary"]["passed"] >= 6


async def test_run_test_task_cannot_be_pointed_outside_the_project(client: Client, project: Path) -> None:
    for path in ("../", "/etc", "tests/../../x", "-p evil"):
        with pytest.raises(MCPError) as caught:
            await client.call_tool("run_test_task", {"test_path": path, "reporter": "json"})
        assert caught.value.code == -32602


# -- db_bridge ----------------------------------------------------------------------------------


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_db_bridge_seed_schema_and_query(client: Client, project: Path) -> None:
    seeded = await call(client, "db_bridge", action="seed", payload="")
    assert seeded == {"action": "seed", "source": "db/seed.sql", "statements": 3, "changes": 2}
    schema = await call(client, "db_bridge", action="schema", payload="*")
    [users] = schema["tables"]
    assert users["name"] == "users"
    assert [c["name"] for c in users["columns"]] == ["id", "name", "note"]
    assert users["columns"][1]["not_null"] is True
    assert users["indexes"] == ["users_name"]
    rows = await call(client, "db_bridge", action="query", payload="SELECT name, note FROM users ORDER BY id")
    assert rows["columns"] == ["name", "note"]
    assert rows["rows"] == [["alice", "likes; semicolons"], ["bob", None]]
    assert "no table" in await refused(client, "db_bridge", action="schema", payload="nope")


WRITES = [
    "INSERT INTO users (name) VALUES ('mallory')",
    "UPDATE users SET name = 'eve'",
    "DELETE FROM users",
    "DROP TABLE users",
    "CREATE TABLE evil (x)",
    "ALTER TABLE users ADD COLUMN x",
    "ATTACH DATABASE 'other.db' AS other",
    "PRAGMA query_only = OFF",
    "PRAGMA journal_mode = DELETE",
    "CREATE TEMP TABLE t (x)",
    "REPLACE INTO users (id, name) VALUES (1, 'x')",
    "SELECT 1; DELETE FROM users",
    "VACUUM",
]


@pytest.mark.parametrize("sql", WRITES)
async def test_db_bridge_query_cannot_write(client: Client, project: Path, sql: str) -> None:
    database = project / "data" / "app.db"
    if not database.exists():
        await call(client, "db_bridge", action="seed", payload="db/seed.sql")
    before = _digest(database)
    assert "read-only" in await refused(client, "db_bridge", action="query", payload=sql)
    assert _digest(database) == before
    assert not (project / "other.db").exists()
    count = await call(client, "db_bridge", action="query", payload="SELECT count(*) FROM users")
    assert count["rows"][0][0] >= 2


async def test_db_bridge_seed_is_one_transaction(client: Client, project: Path) -> None:
    await call(client, "db_bridge", action="seed", payload="CREATE TABLE IF NOT EXISTS audit (x INTEGER)")
    failing = "INSERT INTO audit VALUES (1); INSERT INTO no_such_table VALUES (2);"
    assert "nothing was applied" in await refused(client, "db_bridge", action="seed", payload=failing)
    rows = await call(client, "db_bridge", action="query", payload="SELECT count(*) FROM audit")
    assert rows["rows"] == [[0]]
    assert "nothing was applied" in await refused(client, "db_bridge", action="seed", payload="COMMIT; BEGIN;")
    with pytest.raises(MCPError) as caught:
        await client.call_tool("db_bridge", {"action": "seed", "payload": "../../etc/passwd.sql"})
    assert caught.value.code == -32602


# -- capture_trace ------------------------------------------------------------------------------


async def test_capture_trace_cpu_sees_the_application_thread(client: Client) -> None:
    profile = await call(client, "capture_trace", duration_ms=600, type="cpu")
    assert profile["type"] == "cpu"
    assert profile["duration_ms"] == 600
    assert profile["samples"] > 10
    assert profile["threads"].get("app", 0) > 10
    functions = " ".join(f["function"] for f in profile["top_cumulative"])
    assert "busy_work (sample_app/app.py:" in functions
    assert "run (sample_app/app.py:" in functions


async def test_capture_trace_heap_finds_the_allocating_line(client: Client) -> None:
    profile = await call(client, "capture_trace", duration_ms=500, type="heap")
    assert profile["type"] == "heap"
    locations = [g["location"] for g in profile["top_growth"] if g["size_diff_bytes"] > 0]
    assert any(loc.startswith("sample_app/app.py:") for loc in locations), locations
    assert profile["rss_kib_after"] > 0


async def test_capture_trace_network_counts_bytes_per_connection(client: Client) -> None:
    profile = await call(client, "capture_trace", duration_ms=500, type="network")
    assert profile["type"] == "network"
    moving = [c for c in profile["connections"] if c.get("bytes_sent_delta", 0) > 0]
    assert moving, profile["connections"]
    assert moving[0]["protocol"] == "tcp"
    assert moving[0]["state"] == "ESTABLISHED"
    assert moving[0]["local"].startswith("127.0.0.1:")
    assert any(c.get("bytes_received_delta", 0) > 0 for c in profile["connections"])
    assert any(c["state"] == "LISTEN" for c in profile["connections"])


async def test_run_test_task_timeout_kills_pytest_and_its_children(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    config = root / "mcp-server" / "project-server.toml"
    config.write_text(config.read_text().replace("test_timeout_seconds = 120", "test_timeout_seconds = 3"))
    async with Client(server_parameters(root), mode="legacy") as own:
        text = await refused(own, "run_test_task", test_path="slow", reporter="json")
        assert text == "pytest did not finish within 3 s"
        pids = wait_for_pids(root, timeout=0)
        assert not [pid for pid in pids if alive(pid)]
