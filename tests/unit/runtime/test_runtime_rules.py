"""The runtime's input checks, stream-json dialect, task detection and event log (SQLite, no Docker)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from jarvis.common.errors import InvalidArgument, NotFound, PermissionDenied
from jarvis.common.sql.database import Database
from jarvis.runtime.domain import agent_protocol, tasks
from jarvis.runtime.domain.events import EventLog
from jarvis.runtime.domain.validate import check_argv, check_id, check_name, check_source, new_id
from jarvis.runtime.storage.migrate import MIGRATIONS


@pytest.mark.parametrize(
    "source", ["/srv/repo", "file:///srv/repo", "https://example.com/a/b.git", "ssh://git@example.com/a/b.git", ""]
)
def test_allowed_sources(source: str) -> None:
    assert check_source(source) == source


@pytest.mark.parametrize(
    "source",
    [
        "ext::sh -c id",
        "-uhoh",
        "--upload-pack=x",
        "fd::0",
        "srv/repo",
        "/a/../b",
        "git@host:a/b",
        "file://other/x",
        "http://example.com/x",
        "https:///x",
        "/srv/re\npo",
    ],
)
def test_refused_sources_say_what_is_allowed(source: str) -> None:
    with pytest.raises(InvalidArgument) as exc:
        check_source(source)
    assert "source_url" in exc.value.message


def test_ids_are_path_safe_and_checked_by_kind() -> None:
    for kind in ("project", "workspace", "session", "build"):
        assert check_id(kind, new_id(kind))
    with pytest.raises(NotFound):
        check_id("workspace", new_id("session"))
    for bad in ("../x", "p../../etc", "p0123456789abc", "p0123456789aB"):
        with pytest.raises(NotFound):
            check_id("project", bad)
    with pytest.raises(InvalidArgument):
        check_id("project", "")


@pytest.mark.parametrize("name", ["../x", "", "a b", "-x", "A", "x" * 64])
def test_project_names(name: str) -> None:
    with pytest.raises(InvalidArgument):
        check_name(name)


def test_argv_checks() -> None:
    assert check_argv(["ls", "-la"], "argv") == ["ls", "-la"]
    for bad in ([], [""], ["a\x00b"], ["x"] * 1001):
        with pytest.raises(InvalidArgument):
            check_argv(bad, "argv")


def test_stream_json_dialect() -> None:
    line = agent_protocol.encode_message("stream-json", 'say "hi"\nthen stop')
    message = json.loads(line)
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert message["message"]["content"][0]["text"] == 'say "hi"\nthen stop'
    assert agent_protocol.encode_message("text", "a\nb") == b"a b\n"
    assert agent_protocol.parse_line("stream-json", "stdout", b'{"type":"assistant","x":1}') == (
        "assistant",
        '{"type":"assistant","x":1}',
    )
    assert agent_protocol.parse_line("stream-json", "stdout", b"plain") == ("text", {"text": "plain"})
    assert agent_protocol.parse_line("stream-json", "stderr", b"{}") == ("stderr", {"text": "{}"})
    answer = json.loads(agent_protocol.encode_tool_response("control_request", "r1", '{"ok":1}', False))
    assert answer == {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": "r1", "response": {"ok": 1}},
    }
    with pytest.raises(InvalidArgument):
        agent_protocol.encode_tool_response("tool_request", "r1", "not json", False)


def test_tasks_from_project_files(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text(".PHONY: test\ntest:\n\tpytest\nVAR := 1\nbuild: deps\n")
    (tmp_path / "pyproject.toml").write_text('[project.scripts]\napp = "a:b"\n[tool.poe.tasks]\nfmt = "x"\n')
    (tmp_path / "justfile").write_text("check:\n  true\n")
    (tmp_path / "Taskfile.yml").write_text("version: '3'\ntasks:\n  deploy:\n    cmds: [x]\n")
    (tmp_path / "package.json").symlink_to("/etc/passwd")  # a link out of the checkout is ignored
    found = {(t.source, t.name): t.command for t in tasks.detect(tmp_path)}
    assert found == {
        ("Makefile", "test"): ("make", "test"),
        ("Makefile", "build"): ("make", "build"),
        ("pyproject.toml", "app"): ("app",),
        ("pyproject.toml", "fmt"): ("poe", "fmt"),
        ("justfile", "check"): ("just", "check"),
        ("Taskfile.yml", "deploy"): ("task", "deploy"),
    }


@pytest.fixture
def log(tmp_path: Path) -> EventLog:
    db = Database.from_url(f"sqlite:///{tmp_path / 'runtime.db'}")
    MIGRATIONS.upgrade_to_head(db.engine)
    return EventLog(db, payload_max=200)


def test_event_log_orders_resumes_and_waits(log: EventLog) -> None:
    assert log.append("p1", "s1", [("a", {"n": 1}), ("b", {"n": 2})]) == 2
    assert log.append("p1", "s2", [("a", {})]) == 1  # numbering is per stream
    events, cursor = log.page("s1", 0, 10, 0)
    assert [(e.seq, e.type) for e in events] == [(1, "a"), (2, "b")]
    assert cursor == 2
    assert log.page("s1", 1, 10, 0)[0][0].seq == 2
    big = json.loads(log.payload("x" * 1000))
    assert big["truncated"] is True

    threading.Timer(0.3, lambda: log.append("p1", "s1", [("late", {})])).start()
    started = time.monotonic()
    events, cursor = log.page("s1", 2, 10, 5)
    assert [e.type for e in events] == ["late"]
    assert cursor == 3
    assert time.monotonic() - started < 3
    assert log.page("s1", 3, 10, 0.2) == ([], 3)
    log.drop(["s1"])
    assert log.page("s1", 0, 10, 0) == ([], 0)


def _repo(root: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    return root


@pytest.mark.parametrize("form", ["{path}", "file://{path}", "file://localhost{path}"])
def test_local_sources_inside_the_roots_are_allowed(tmp_path: Path, form: str) -> None:
    repo = _repo(tmp_path / "roots" / "app")
    source = form.format(path=repo)
    assert check_source(source, [tmp_path / "roots"]) == source


@pytest.mark.parametrize(
    "form",
    [
        "{root}/../elsewhere",
        "file://{root}/../elsewhere",
        "file://{root}/%2e%2e/elsewhere",
        "file://{root}/sub/..%2F..%2Felsewhere",
    ],
)
def test_file_sources_with_dotdot_are_refused(tmp_path: Path, form: str) -> None:
    """Issue 15: `file://` sources accepted `..` (local paths already did not)."""
    _repo(tmp_path / "elsewhere")
    with pytest.raises(InvalidArgument, match=r"without '\.\.'"):
        check_source(form.format(root=tmp_path / "roots"), [tmp_path / "roots"])


def test_local_sources_outside_the_roots_are_refused(tmp_path: Path) -> None:
    """Issue 15: any local repository could be cloned into a project (and read by its agent)."""
    roots = [tmp_path / "roots"]
    outside = _repo(tmp_path / "private")
    (tmp_path / "roots").mkdir()
    link = tmp_path / "roots" / "link"
    link.symlink_to(outside)
    redirected = tmp_path / "roots" / "worktree"
    redirected.mkdir()
    (redirected / ".git").write_text(f"gitdir: {outside / '.git'}\n")
    for source in (str(outside), f"file://{outside}", str(link), f"file://{link}", str(redirected)):
        with pytest.raises(PermissionDenied, match="outside the allowed project roots"):
            check_source(source, roots)
