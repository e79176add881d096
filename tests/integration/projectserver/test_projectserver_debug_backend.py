"""The debug gateway's `project` backend, calling a real project server it starts itself."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jarvis.common.errors import FailedPrecondition, InvalidArgument
from jarvis.debug.backends.credentials import Credentials
from jarvis.debug.backends.project import NAME, ProjectBackend
from jarvis.debug.domain.gateway import Gateway
from jarvis.projectserver.scaffold import template_tool_schemas
from tests.support.projectserver import alive, make_project


@pytest.fixture
def environ(project: Path) -> dict[str, str]:
    return {NAME: str(project)}


@pytest.fixture
def backend(environ: dict[str, str]) -> Iterator[ProjectBackend]:
    backend = ProjectBackend(Credentials(environ=environ))
    yield backend
    backend.close()


def run(gateway: Gateway, tool: str, **arguments: object) -> object:
    return gateway.run(tool, json.dumps(arguments))


def test_tools_mirror_the_template(backend: ProjectBackend) -> None:
    specs = {s.name: s for s in backend.tools()}
    schemas = template_tool_schemas()
    assert list(specs) == [f"project_{name}" for name in schemas]
    for name, schema in schemas.items():
        spec = specs[f"project_{name}"]
        assert spec.description == schema["description"]
        assert [p.name for p in spec.params] == list(schema["inputSchema"]["properties"])
    depth = next(p for p in specs["project_inspect_state"].params if p.name == "depth")
    assert (depth.type, depth.required, depth.default, depth.minimum, depth.maximum) == ("integer", False, 3, 1, 10)
    action = next(p for p in specs["project_db_bridge"].params if p.name == "action")
    assert action.required
    assert action.enum == ("query", "schema", "seed")


def test_calls_go_through_the_gateway_to_the_project_server(backend: ProjectBackend) -> None:
    gateway = Gateway([backend])
    assert [c.name for c in gateway.categories()] == ["project"]
    assert run(gateway, "project_inspect_state", path="cache.7") == {"value": "seven", "type": "str"}
    run(gateway, "project_db_bridge", action="seed", payload="db/seed.sql")
    rows = run(gateway, "project_db_bridge", action="query", payload="SELECT name FROM users ORDER BY id")
    assert rows["rows"] == [["alice"], ["bob"]]  # type: ignore[index]
    logs = run(gateway, "project_get_logs", level="error", limit=1)
    assert logs["entries"][0]["msg"] == "timeout talking to bank"  # type: ignore[index]


def test_errors_keep_their_meaning(backend: ProjectBackend) -> None:
    gateway = Gateway([backend])
    with pytest.raises(InvalidArgument, match=r"maxLength|too long"):  # the server's -32602
        run(gateway, "project_inspect_state", path="x" * 600)
    with pytest.raises(InvalidArgument, match="outside the project"):
        run(gateway, "project_run_test_task", test_path="../elsewhere", reporter="json")
    with pytest.raises(FailedPrecondition, match="no table or view named 'nope'"):  # the server's isError result
        run(gateway, "project_db_bridge", action="schema", payload="nope")


def test_not_configured_says_what_to_set(tmp_path: Path) -> None:
    unset = ProjectBackend(Credentials(environ={}))
    with pytest.raises(FailedPrecondition, match=f"set {NAME}.*jarvis scaffold project-server"):
        unset.call("project_get_logs", {"level": "info", "limit": 1})
    empty = ProjectBackend(Credentials(environ={NAME: str(tmp_path)}))
    with pytest.raises(FailedPrecondition, match="has no project server"):
        empty.call("project_get_logs", {"level": "info", "limit": 1})


def test_restarts_after_a_crash_follows_the_setting_and_stops_on_close(
    backend: ProjectBackend, environ: dict[str, str], tmp_path: Path
) -> None:
    gateway = Gateway([backend])
    assert run(gateway, "project_inspect_state", path="cache.7")
    first = backend._manager.pid if backend._manager else None
    assert first is not None
    os.kill(first, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while backend._manager is not None and backend._manager.running and time.monotonic() < deadline:
        time.sleep(0.05)
    assert run(gateway, "project_inspect_state", path="cache.7") == {"value": "seven", "type": "str"}
    second = backend._manager.pid if backend._manager else None
    assert second is not None
    assert second != first

    other = make_project(tmp_path / "other")
    environ[NAME] = str(other)
    assert run(gateway, "project_inspect_state", path="cache.7")
    assert not alive(second)  # the old project's server was stopped
    third = backend._manager.pid if backend._manager else None
    assert third is not None
    assert backend._manager is not None
    assert backend._manager.project_dir == other.resolve()

    backend.close()
    assert not alive(third)


def test_project_server_runs_without_jarvis_environment(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 15: the server inherited Jarvis's environment (AWS_*, JIRA_API_TOKEN) and could show it."""
    monkeypatch.setenv("JIRA_API_TOKEN", "jira-canary-15")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-canary-15")
    backend = ProjectBackend(Credentials(environ=environ))
    try:
        assert run(Gateway([backend]), "project_inspect_state", path="cache.7") == {"value": "seven", "type": "str"}
        assert backend._manager is not None
        pid = backend._manager.pid
        assert pid is not None
        variables = dict(
            entry.split(b"=", 1) for entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if b"=" in entry
        )
    finally:
        backend.close()
    assert b"JIRA_API_TOKEN" not in variables
    assert b"AWS_SECRET_ACCESS_KEY" not in variables
    assert not [k for k, v in variables.items() if b"canary" in v]
    assert set(variables) <= {b"PATH", b"HOME", b"LANG", b"LC_ALL", b"LC_CTYPE", b"TZ", b"TMPDIR", b"PYTHONPATH"}


def test_gateway_refuses_environment_paths_before_any_server_sees_them(backend: ProjectBackend) -> None:
    """Also for servers scaffolded before the template refused them itself."""
    gateway = Gateway([backend])
    for path in ("os.environ", "posix.environ", "app.config.API_KEY", "settings.db_password"):
        with pytest.raises(InvalidArgument, match="never reads"):
            run(gateway, "project_inspect_state", path=path, depth=3)
    assert backend._manager is None  # refused before a server was even started
