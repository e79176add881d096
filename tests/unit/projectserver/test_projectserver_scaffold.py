"""`jarvis scaffold project-server`: what it writes, when it refuses, and that the result checks itself."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from jarvis.cli.main import cli
from jarvis.projectserver import scaffold
from jarvis.projectserver.scaffold import ScaffoldError, scaffold_project_server, template_tool_schemas

TEMPLATE = Path(scaffold.__file__).parent / "template"
EXPECTED = {
    "mcp-server/.agent/index.agent.md",
    "mcp-server/pyproject.toml",
    "mcp-server/project-server.toml",
    "mcp-server/src/project_mcp_server/__main__.py",
    "mcp-server/src/project_mcp_server/server.py",
    "mcp-server/src/project_mcp_server/schemas.py",
    "mcp-server/src/project_mcp_server/registry.py",
    "mcp-server/src/project_mcp_server/tools/__init__.py",
    "mcp-server/src/project_mcp_server/tools/inspect_state.py",
    "mcp-server/src/project_mcp_server/tools/run_test_task.py",
    "mcp-server/src/project_mcp_server/tools/db_bridge.py",
    "mcp-server/src/project_mcp_server/tools/capture_trace.py",
    "mcp-server/src/project_mcp_server/tools/get_logs.py",
    "mcp-server/tests/test_manifest_sync.py",
    "mcp-server/tests/test_readonly_rules.py",
}


def test_writes_the_template_byte_for_byte(tmp_path: Path) -> None:
    result = scaffold_project_server(tmp_path / "project")
    written = {str(p.relative_to(result.root)) for p in result.files}
    assert written >= EXPECTED
    assert not [w for w in written if "__pycache__" in w or w.endswith(".pyc")]
    for relative in written:
        assert (result.root / relative).read_bytes() == (TEMPLATE / relative).read_bytes()


def test_refuses_to_overwrite_and_writes_nothing_then(tmp_path: Path) -> None:
    manifest = tmp_path / "mcp-server" / ".agent" / "index.agent.md"
    manifest.parent.mkdir(parents=True)
    manifest.write_text("my own notes")
    with pytest.raises(ScaffoldError, match=r"already exist.*--force"):
        scaffold_project_server(tmp_path)
    assert manifest.read_text() == "my own notes"
    assert not (tmp_path / "mcp-server" / "pyproject.toml").exists()
    scaffold_project_server(tmp_path, force=True)
    assert manifest.read_text().startswith("# ProjectServer")


def test_refuses_a_file_as_destination(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("")
    with pytest.raises(ScaffoldError, match="not a directory"):
        scaffold_project_server(target)


def test_cli_command(tmp_path: Path) -> None:
    runner = CliRunner()
    first = runner.invoke(cli, ["scaffold", "project-server", str(tmp_path / "p")])
    assert first.exit_code == 0, first.output
    assert "wrote mcp-server/.agent/index.agent.md" in first.output
    second = runner.invoke(cli, ["scaffold", "project-server", str(tmp_path / "p")])
    assert second.exit_code == 1
    assert "--force" in second.output
    assert runner.invoke(cli, ["scaffold", "project-server", "--force", str(tmp_path / "p")]).exit_code == 0


def test_jarvis_reads_the_same_tool_table_the_server_serves(tmp_path: Path) -> None:
    root = scaffold_project_server(tmp_path).root
    source = root / "mcp-server" / "src" / "project_mcp_server" / "schemas.py"
    spec = importlib.util.spec_from_file_location("scaffolded_schemas", source)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert template_tool_schemas() == module.TOOLS
    assert list(module.TOOLS) == ["inspect_state", "run_test_task", "db_bridge", "capture_trace", "get_logs"]


def test_the_generated_project_checks_itself(tmp_path: Path) -> None:
    """Its own tests (manifest in sync with the code, read-only rules) pass on a fresh scaffold."""
    root = scaffold_project_server(tmp_path).root
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--rootdir={root}", "mcp-server/tests"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert " passed" in run.stdout
