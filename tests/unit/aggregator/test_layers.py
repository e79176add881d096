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
    ("settings", "metrics", "worker_metrics", "jsonrpc", "children", "ratelimit", "aliases", "pinned"),
    ("views",),  # what tools answer: explicit types, so a protobuf change cannot change what agents see
    ("gateways",),  # the backend services: stubs, deadlines, retries, caches, protobuf -> views
    ("audit", "probes"),
    ("usage", "sessions"),
    ("calls",),  # the call pipeline: every door's tool call, through one chain of policies to its backend
    ("mcp_server",),  # binds a surface to an MCP server
    ("direct_calls",),  # that server's tool calls, answered without the SDK's per-request machinery
    ("tunnel",),
    ("downstream",),  # the servers Jarvis hosts and proxies
    ("discovery",),  # the catalog and index over every tool
    ("context",),  # what tool handlers reach
    ("health",),  # readiness: what every service answers
    ("codemode",),  # the Deno sandbox that runs an agent's program, and its pipe to Jarvis
    ("surfaces",),  # the MCP endpoints and their tools
    ("oauth",),  # sign-in: the authorization server and the access tokens the gate accepts
    ("console",),  # the web pages: a door, whose actions are tool calls through the pipeline
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


# Generated message modules: only the gateways speak them; everything above reads views.
PROTOBUF_PACKAGES = ("jarvis.api", "grpc_health", "jarvis.onnx")
# The ONNX graph builder writes the embedding model's graph: an ONNX protobuf, not a backend service's message.
PROTOBUF_ALLOWED = {"discovery/graph.py": ("jarvis.onnx",)}


def external_imports_of(path: Path) -> Iterator[tuple[int, str]]:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name


def test_no_protobuf_outside_the_gateways() -> None:
    leaks = []
    for module, path in modules():
        if unit_of(module) == "gateways":
            continue
        where = path.relative_to(ROOT).as_posix()
        allowed = PROTOBUF_ALLOWED.get(where, ())
        for line, imported in external_imports_of(path):
            if any(imported == p or imported.startswith(p + ".") for p in PROTOBUF_PACKAGES) and not any(
                imported == a or imported.startswith(a + ".") for a in allowed
            ):
                leaks.append(f"{where}:{line} imports {imported}")
    assert not leaks, "protobuf modules imported above the gateways:\n" + "\n".join(leaks)


def file_imports() -> dict[str, set[str]]:
    """module -> the modules of this package it imports, a `from package import submodule` naming the submodule."""
    known = dict(modules())
    graph: dict[str, set[str]] = {module: set() for module in known}
    for module, path in known.items():
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module == PACKAGE or node.module.startswith(PACKAGE + "."):
                    for alias in node.names:
                        child = f"{node.module}.{alias.name}"
                        targets.append(child if child in known else node.module)
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith(PACKAGE + ".")]
            graph[module].update(t for t in targets if t in known and t != module)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle_between_files() -> None:
    """Imports inside functions and under TYPE_CHECKING count: a cycle hidden from the interpreter is still one."""
    found = cycles(file_imports())
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_cycle_check_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


# Inside `downstream`, bottom first: the wire, then running the servers over it, then the surfaces that proxy them.
DOWNSTREAM_LAYERS = ("transport", "auth", "hosting", "proxy")  # auth: each person's OAuth (issue 32)


def test_downstream_rooms_import_down() -> None:
    rank = {room: n for n, room in enumerate(DOWNSTREAM_LAYERS)}
    prefix = f"{PACKAGE}.downstream."
    upward = []
    for module, path in modules():
        if not module.startswith(prefix):
            continue
        source = module.removeprefix(prefix).split(".")[0]
        assert source in rank, f"{path.relative_to(ROOT)} is in no room of downstream: place it in one"
        for line, target_module in imports_of(path):
            if (
                target_module.startswith(prefix)
                and rank[target_module.removeprefix(prefix).split(".")[0]] > rank[source]
            ):
                upward.append(f"{path.relative_to(ROOT)}:{line} imports {target_module}")
    assert not upward, "downstream imports that do not point down:\n" + "\n".join(upward)


MAX_LINES = 400  # past this a module has more than one job: split it where the jobs part


def test_no_module_over_the_size_limit() -> None:
    long = [
        f"{path.relative_to(ROOT)}: {n} lines"
        for _, path in modules()
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    ]
    assert not long, f"modules over {MAX_LINES} lines:\n" + "\n".join(long)
