"""The aggregator's imports point one way: each module imports only the layers below its own, and its own package.

A new module must be placed in LAYERS before it can be imported anywhere, which is the point: where it sits is a
decision, not an accident of whatever it happened to need.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3] / "aggregator" / "src" / "jarvis" / "aggregator"
PACKAGE = "jarvis.aggregator"

# Bottom first. A unit is a top-level module or package of jarvis.aggregator.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("tooling",),  # tools, actions, schemas, the caller and its scopes, results, events
    ("settings", "metrics", "worker_metrics", "jsonrpc", "children", "ratelimit", "aliases"),
    ("views",),  # what tools answer: explicit types, so a protobuf change cannot change what agents see
    ("gateways",),  # the backend services: stubs, deadlines, retries, caches, protobuf -> views
    ("audit", "probes"),
    ("usage", "sessions"),
    ("mcp_server",),  # binds a surface to an MCP server
    ("direct_calls",),  # that server's tool calls, answered without the SDK's per-request machinery
    ("tunnel",),
    ("downstream",),  # the servers Jarvis hosts and proxies
    ("discovery",),  # the catalog and index over every tool
    ("context",),  # what tool handlers reach
    ("health",),  # readiness: what every service answers
    ("surfaces",),  # the MCP endpoints and their tools
    ("auth",),  # the HTTP gate in front of everything
    ("app",),  # the composition root
)
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


def unit_of(module: str) -> str:
    return module.removeprefix(PACKAGE + ".").split(".")[0]


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT).with_suffix("")
        parts = [p for p in relative.parts if p != "__init__"]
        if parts:
            yield ".".join([PACKAGE, *parts]), path


def imports_of(path: Path) -> Iterator[tuple[int, str]]:
    """Every jarvis.aggregator module `path` imports, at any depth (imports inside functions count too)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == PACKAGE:
                for alias in node.names:
                    yield node.lineno, f"{PACKAGE}.{alias.name}"
            elif node.module.startswith(PACKAGE + "."):
                yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE + "."):
                    yield node.lineno, alias.name


def test_every_module_has_a_layer() -> None:
    unplaced = sorted({unit_of(m) for m, _ in modules()} - set(RANK))
    assert not unplaced, f"place these in LAYERS: {unplaced}"


def test_imports_point_down() -> None:
    upward = []
    for module, path in modules():
        source = unit_of(module)
        for line, target_module in imports_of(path):
            target = unit_of(target_module)
            if target == source:
                continue  # inside one module or package
            if RANK.get(target, len(LAYERS)) >= RANK.get(source, -1):
                upward.append(f"{path.relative_to(ROOT)}:{line} imports {target_module}")
    assert not upward, "imports that do not point down:\n" + "\n".join(upward)


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The walker finds imports inside functions, so a late import cannot hide an upward edge."""
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from jarvis.aggregator.app import Aggregator\n    return Aggregator\n")
    assert list(imports_of(sample)) == [(2, "jarvis.aggregator.app")]
