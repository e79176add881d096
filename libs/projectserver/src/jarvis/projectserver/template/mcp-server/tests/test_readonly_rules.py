"""The mechanical half of inspect_state's read-only argument (see `project_mcp_server.readonly`).

No builtin that dispatches to an object's type is called, and nothing is assigned to an
attribute or an item, anywhere in the code that walks and renders application objects.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "project_mcp_server"
MODULES = [PACKAGE / "readonly.py", PACKAGE / "tools" / "inspect_state.py"]
FORBIDDEN = {
    "getattr",
    "setattr",
    "delattr",
    "hasattr",
    "isinstance",
    "vars",
    "dir",
    "repr",
    "format",
    "str",
    "iter",
    "len",
    "hash",
    "bool",
    "eval",
    "exec",
    "compile",
    "__import__",
    "open",
    "print",
    "sorted",
}


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.name)
def test_no_dispatching_builtins(module: Path) -> None:
    tree = ast.parse(module.read_text(encoding="utf-8"))
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert not calls & FORBIDDEN


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.name)
def test_no_attribute_or_item_assignment(module: Path) -> None:
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.stmt):
            continue
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        else:
            targets = []
        assert not any(isinstance(t, ast.Attribute | ast.Subscript) for t in targets), f"line {node.lineno}"
        assert not isinstance(node, ast.Delete), f"line {node.lineno}"
