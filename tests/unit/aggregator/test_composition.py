"""The composition root builds each part once, finished, with what it needs passed in (issue 45 item 3).

A part wired by assignment after it was built (`host.personal.base_url = ...`, `resource.standing = ...`) leaves a
default in place that shows only at request time when a line moves. So no module of the aggregator sets a field of
an object other than `self`, except the state of a record its own module keeps (a consent's flow, a child process,
a rate bucket, a gate request being decided) and objects of libraries whose API is set that way.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3] / "aggregator" / "src" / "jarvis" / "aggregator"

# Per module, the fields of other objects it may set, and why.
STATE: dict[str, set[str]] = {
    # A request as the gate's checks decide it, one field per check (auth/checks.py's GateRequest).
    "auth/checks.py": {"req.body", "req.calls", "req.messages", "req.principal"},
    # onnxruntime's SessionOptions and an ONNX graph's tensor type: set by assignment, as their API is.
    "discovery/embedding.py": {"options.intra_op_num_threads", "options.inter_op_num_threads"},
    "discovery/graph.py": {"info.type.tensor_type.elem_type"},
    # A consent's flow as it goes (its own module's record), and a log record made readable for the relay.
    "downstream/auth/consent.py": {
        "flow.opened",
        "flow.task",
        "flow.authorize_url",
        "flow.state",
        "flow.error",
        "record.exc_info",
        "record.exc_text",
        "record.levelno",
        "record.levelname",
    },
    # The SDK's OAuth client context and metadata, and a token as the SDK's storage hands it over.
    "downstream/auth/provider.py": {
        "context.ahead",
        "self.client_metadata.token_endpoint_auth_method",
        "self.context.protected_resource_metadata",
        "self.context.oauth_metadata",
        "self.context.auth_server_url",
    },
    "downstream/auth/storage.py": {"token.expires_in"},
    # A server's host marked eager (started at once) by the host that owns it.
    "downstream/hosting/host.py": {"self.hosts[server.name].eager", "self.hosts[name].eager"},
    # A connection's negotiated versions, a child process's exit, a link's idle time: their own module's records.
    "downstream/transport/connection.py": {"connection.modern_versions"},
    "downstream/transport/container.py": {"child.returncode", "child.exit_detail"},
    "downstream/transport/http_calls.py": {"link.idle_since"},
    "downstream/transport/stdio.py": {
        "child.returncode",
        "child.oversized",
        "child.garbage_lines",
        "child.last_garbage",
    },
    # Protobuf messages and httpx requests, filled as their libraries' API is.
    "gateways/registry.py": {"whole.total"},
    "gateways/runtime.py": {"request.session_id"},
    "pinned.py": {"request.url", "request.extensions"},
    # The SDK's server without its OpenTelemetry middleware (mcp_server.untraced).
    "mcp_server.py": {"server.middleware"},
    # A rate bucket refilled and taken from (ratelimit.py's own record).
    "ratelimit.py": {"bucket.tokens", "bucket.updated"},
    # uvicorn's server told to stop, and prometheus samples merged across workers.
    "tunnel/listener.py": {"self._server.should_exit"},
    "worker_metrics.py": {"merged.samples"},
}


def fields_set_on_others(root: Path = ROOT) -> Iterator[tuple[str, int, str]]:
    for path in sorted(root.rglob("*.py")):
        module = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            else:
                continue
            for target in targets:
                for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if not isinstance(element, ast.Attribute):
                        continue
                    if isinstance(element.value, ast.Name) and element.value.id == "self":
                        continue  # its own field
                    yield module, node.lineno, ast.unparse(element)


def test_no_part_is_wired_after_it_was_built() -> None:
    late = [
        f"{module}:{line} sets {field}"
        for module, line, field in fields_set_on_others()
        if field not in STATE.get(module, set())
    ]
    assert not late, (
        "fields of other objects set after they were built: pass them to the constructor instead (the composition "
        "root builds in dependency order), or, for a record's own state, list it in STATE with why:\n" + "\n".join(late)
    )


def test_the_check_sees_late_wiring(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(
        "class App:\n"
        "    def __init__(self, host, resource):\n"
        "        self.host = host\n"
        "        host.personal.base_url = self.url\n"
        "        self.resource = resource\n"
        "        self.resource.standing = None\n"
    )
    found = [(module, field) for module, _, field in fields_set_on_others(tmp_path)]
    assert found == [("app.py", "host.personal.base_url"), ("app.py", "self.resource.standing")]


def test_every_exception_is_still_needed() -> None:
    seen = {(module, field) for module, _, field in fields_set_on_others()}
    stale = [(module, field) for module, fields in STATE.items() for field in fields if (module, field) not in seen]
    assert not stale, f"exceptions no module needs any more: {stale}"
