"""apply_devops(): real config files per stack, refusal, force with backup, dry run, safety."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from jarvis.common.errors import InvalidArgument
from jarvis.registry.domain.project import SUPPORTED_STACKS, apply_devops
from tests.support.required_tool import required_tool
from tests.unit.project.project_support import write

CI = ".github/workflows/ci.yml"
PRE_COMMIT = ".pre-commit-config.yaml"


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def _hook_ids(config: Any) -> set[str]:
    return {hook["id"] for repo in config["repos"] for hook in repo["hooks"]}


def _workflow_runs(workflow: Any) -> str:
    # PyYAML reads the bare key `on` as True (YAML 1.1); either way the trigger must be there.
    assert "on" in workflow or True in workflow
    return "\n".join(step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"])


def test_python_stack_writes_working_configs(python_project: Path) -> None:
    (python_project / PRE_COMMIT).unlink()
    (python_project / CI).unlink()

    result = apply_devops(python_project)

    assert result.stack == "python"
    assert result.written == ("ruff.toml", PRE_COMMIT, CI)
    assert result.skipped == ()
    ruff = tomllib.loads((python_project / "ruff.toml").read_text())
    assert "E" in ruff["lint"]["select"]
    assert {"ruff-check", "ruff-format", "trailing-whitespace"} <= _hook_ids(_yaml(python_project / PRE_COMMIT))
    runs = _workflow_runs(_yaml(python_project / CI))
    assert "ruff check" in runs
    assert "pytest" in runs
    assert stat.S_IMODE((python_project / "ruff.toml").stat().st_mode) == 0o644
    # The real ruff accepts the generated config and the project's code passes it.
    checked = subprocess.run(
        [required_tool("ruff"), "check", "--config", "ruff.toml", "src", "tests"],
        cwd=python_project,
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_existing_file_is_refused_without_force(python_project: Path) -> None:
    original = (python_project / PRE_COMMIT).read_text()

    result = apply_devops(python_project)

    assert f"{PRE_COMMIT}: exists (use force=true to overwrite)" in result.skipped
    assert f"{CI}: exists (use force=true to overwrite)" in result.skipped
    assert result.written == ("ruff.toml",)
    assert (python_project / PRE_COMMIT).read_text() == original


def test_force_overwrites_and_keeps_every_backup(python_project: Path) -> None:
    original = (python_project / PRE_COMMIT).read_text()

    first = apply_devops(python_project, force=True)
    (python_project / PRE_COMMIT).write_text("repos: [] # edited by hand\n")
    second = apply_devops(python_project, force=True)

    assert PRE_COMMIT in first.written
    assert f"{PRE_COMMIT}.bak" in first.backups
    assert (python_project / f"{PRE_COMMIT}.bak").read_text() == original
    assert second.backups == (f"{PRE_COMMIT}.bak.1",)
    assert (python_project / f"{PRE_COMMIT}.bak.1").read_text() == "repos: [] # edited by hand\n"
    assert "ruff.toml: already up to date" in second.skipped
    assert "ruff-check" in _hook_ids(_yaml(python_project / PRE_COMMIT))


def test_dry_run_writes_nothing(python_project: Path) -> None:
    before = sorted(p.relative_to(python_project) for p in python_project.rglob("*"))

    result = apply_devops(python_project, dry_run=True, force=True)

    assert result.dry_run
    assert result.written == ("ruff.toml", PRE_COMMIT, CI)
    assert sorted(p.relative_to(python_project) for p in python_project.rglob("*")) == before


def test_ruff_config_in_pyproject_is_respected(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": '[project]\nname = "x"\n[tool.ruff]\nline-length = 88\n'})

    result = apply_devops(tmp_path)

    assert "ruff.toml: pyproject.toml [tool.ruff] already configures ruff; left as is" in result.skipped
    assert not (tmp_path / "ruff.toml").exists()


@pytest.mark.parametrize(
    ("package_type", "export"), [("module", "export default ["), ("commonjs", "module.exports = [")]
)
def test_node_stack_eslint_config_loads(tmp_path: Path, package_type: str, export: str) -> None:
    write(tmp_path, {"package.json": json.dumps({"name": "x", "type": package_type}), "index.js": ""})

    result = apply_devops(tmp_path)

    assert result.stack == "node"
    assert result.written == ("eslint.config.js", PRE_COMMIT, CI)
    assert export in (tmp_path / "eslint.config.js").read_text()
    assert "eslint" in _hook_ids(_yaml(tmp_path / PRE_COMMIT))
    assert "eslint" in _workflow_runs(_yaml(tmp_path / CI))
    # Node itself loads the config the way ESLint does and finds a flat-config array.
    script = "import(process.argv[1]).then(m => { if (!Array.isArray(m.default)) process.exit(3) })"
    loaded = subprocess.run(
        [required_tool("node"), "-e", script, str(tmp_path / "eslint.config.js")], capture_output=True, text=True
    )
    assert loaded.returncode == 0, loaded.stderr


def test_node_legacy_eslint_config_is_kept(node_project: Path) -> None:
    result = apply_devops(node_project)
    assert "eslint.config.js: .eslintrc.json already configures eslint; left as is" in result.skipped


def test_go_stack(go_project: Path) -> None:
    result = apply_devops(go_project)

    assert result.stack == "go"
    assert result.written == (".golangci.yml", PRE_COMMIT, CI)
    assert _yaml(go_project / ".golangci.yml")["version"] == "2"
    assert "golangci-lint" in _hook_ids(_yaml(go_project / PRE_COMMIT))
    workflow = _yaml(go_project / CI)
    assert "go test" in _workflow_runs(workflow)
    assert any("golangci-lint-action" in step.get("uses", "") for step in workflow["jobs"]["lint"]["steps"])


def test_rust_stack_rustfmt_accepts_config(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "Cargo.toml": '[package]\nname = "x"\nversion = "0.1.0"\nedition = "2021"\n',
            "src/main.rs": 'fn main() {\n    println!("hi");\n}\n',
        },
    )

    result = apply_devops(tmp_path)

    assert result.stack == "rust"
    assert result.written == ("rustfmt.toml", PRE_COMMIT, CI)
    assert tomllib.loads((tmp_path / "rustfmt.toml").read_text())["max_width"] == 100
    assert "cargo clippy" in _workflow_runs(_yaml(tmp_path / CI))
    checked = subprocess.run(
        [required_tool("rustfmt"), "--check", "--edition", "2021", "src/main.rs"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout
    assert "Warning" not in checked.stderr, checked.stderr  # rustfmt warns about unknown options


def test_stack_given_explicitly_and_by_alias(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": '[project]\nname = "x"\n'})
    assert apply_devops(tmp_path, stack="TypeScript", dry_run=True).stack == "node"
    assert apply_devops(tmp_path, stack="golang", dry_run=True).stack == "go"


def test_unknown_stack_lists_supported_ones(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="unknown stack 'cobol'; supported stacks: go, node, python, rust"):
        apply_devops(tmp_path, stack="cobol")
    assert SUPPORTED_STACKS == ("go", "node", "python", "rust")


def test_undetectable_stack_says_what_to_pass(tmp_path: Path) -> None:
    write(tmp_path, {"notes.md": "# notes\n"})
    with pytest.raises(InvalidArgument, match=r"could not detect the stack.*pass type= \(jarvis_project"):
        apply_devops(tmp_path)


def test_mixed_project_picks_the_stack_with_most_files(tmp_path: Path) -> None:
    write(
        tmp_path,
        {"pyproject.toml": '[project]\nname = "x"\n', "package.json": "{}", "a.js": "", "b.js": "", "c.py": ""},
    )
    assert apply_devops(tmp_path, dry_run=True).stack == "node"


def test_symlinked_folder_out_of_the_project_is_not_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "workflows").mkdir(parents=True)
    project = write(tmp_path / "project", {"main.go": "package main\n", "go.mod": "module x\n"})
    os.symlink(outside, project / ".github")

    result = apply_devops(project)

    assert f"{CI}: its folder is a symlink leading outside the project; not written" in result.skipped
    assert list(outside.rglob("*")) == [outside / "workflows"]
