"""Agent sessions over real gRPC: stream-json dialogue, resumable events, tool requests, ending, cleanup."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.integration.runtime.conftest import Service, rpc_error


def wait_for(
    service: Service, project_id: str, session_id: str, predicate: Any, after: int = 0, timeout: float = 20
) -> list[Any]:
    """Events after `after` until one satisfies `predicate` (long-polling like a client would)."""
    seen: list[Any] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page = service.call("SessionEvents", project_id=project_id, session_id=session_id, after=after, wait_seconds=2)
        seen += page.events
        after = page.next_cursor
        if any(predicate(e) for e in page.events):
            return seen
    raise AssertionError(f"no matching event within {timeout}s; saw {[(e.seq, e.type) for e in seen]}")


def payload(event: Any) -> Any:
    return json.loads(event.payload_json)


def test_session_dialogue_events_and_changes(service: Service, source: Path) -> None:
    project = service.call("CreateProject", name="agents", source_url=str(source))
    session = service.call("SpawnSession", project_id=project.id, prompt="hello")
    assert session.state == "running"
    assert session.workspace_id.startswith("w")
    events = wait_for(service, project.id, session.id, lambda e: e.type == "result")
    assert [e.seq for e in events] == list(range(1, len(events) + 1))  # ordered, gap-free
    types = [e.type for e in events]
    assert types[0] == "session_start"
    assert {"system", "input", "assistant", "result"} <= set(types)
    assert payload(next(e for e in events if e.type == "assistant"))["message"]["content"][0]["text"] == "echo: hello"

    # Resuming from a cursor returns only what came after it.
    cursor = events[-1].seq
    service.call("MessageSession", project_id=project.id, workspace_id=session.workspace_id, message="write notes.txt")
    later = wait_for(service, project.id, session.id, lambda e: e.type == "result", after=cursor)
    assert all(e.seq > cursor for e in later)

    changes = service.call("ProjectChanges", project_id=project.id, session_id=session.id)
    assert changes.branch == f"jarvis/{session.workspace_id}"
    assert "?? notes.txt" in changes.status

    # A tool request from the agent is answered by request id, once.
    service.call("MessageSession", project_id=project.id, session_id=session.id, message="ask tool")
    asked = wait_for(service, project.id, session.id, lambda e: e.type == "tool_request", after=later[-1].seq)
    service.call(
        "RespondToolRequest",
        project_id=project.id,
        session_id=session.id,
        request_id="req-1",
        result_json=json.dumps({"healthy": True}),
    )
    answered = wait_for(
        service, project.id, session.id, lambda e: "tool answered" in e.payload_json, after=asked[-1].seq
    )
    assert payload(answered[-1])["answer"]["result"] == {"healthy": True}
    again = rpc_error(
        lambda: service.call(
            "RespondToolRequest", project_id=project.id, session_id=session.id, request_id="req-1", result_json="1"
        )
    )
    assert again.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "already answered" in again.details()
    unknown = rpc_error(
        lambda: service.call(
            "RespondToolRequest", project_id=project.id, session_id=session.id, request_id="nope", result_json="1"
        )
    )
    assert "no tool request 'nope'" in unknown.details()

    busy = rpc_error(lambda: service.call("DeleteWorkspace", project_id=project.id, workspace_id=session.workspace_id))
    assert busy.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert session.id in busy.details()
    listed = service.call("ListWorkspaces", project_id=project.id).workspaces
    assert [(w.id, w.session_id, w.kind) for w in listed] == [(session.workspace_id, session.id, "worktree")]

    ended = service.call("EndSession", project_id=project.id, session_id=session.id)
    assert ended.state == "ended"
    assert ended.exit_code == 0
    assert "killed" not in ended.detail
    gone = rpc_error(lambda: service.call("MessageSession", project_id=project.id, session_id=session.id, message="hi"))
    assert gone.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "spawn" in gone.details()

    # The same workspace can host a new session; then it is deleted once free.
    second = service.call("SpawnSession", project_id=project.id, workspace_id=session.workspace_id)
    service.call("EndSession", project_id=project.id, session_id=second.id, force=True)
    service.call("DeleteWorkspace", project_id=project.id, workspace_id=session.workspace_id)
    assert list(service.call("ListWorkspaces", project_id=project.id).workspaces) == []

    cleaned = service.call("CleanupSessions", project_id=project.id)
    assert set(cleaned.removed) == {session.id, second.id}
    assert list(service.call("ListSessions", project_id=project.id).sessions) == []


def test_a_session_that_ignores_its_input_is_killed_after_the_grace(service: Service) -> None:
    project = service.call("CreateProject", name="stubborn", agent_protocol="stream-json")
    session = service.call("SpawnSession", project_id=project.id, prompt="stubborn")
    time.sleep(0.5)
    started = time.monotonic()
    ended = service.call("EndSession", project_id=project.id, session_id=session.id)
    assert ended.state == "ended"
    assert "killed after 2 s" in ended.detail
    assert 1.5 < time.monotonic() - started < 15
    processes = service.call("Exec", project_id=project.id, argv=["ps", "-o", "comm"]).stdout.split()
    assert "fake-agent" not in processes
    assert processes.count("sleep") == 1


def test_plain_text_agents_and_exit_codes(service: Service) -> None:
    project = service.call("CreateProject", name="text", agent_protocol="text", agent_command=["fake-agent"])
    session = service.call("SpawnSession", project_id=project.id, prompt="exit 3")
    events = wait_for(service, project.id, session.id, lambda e: e.type == "exit")
    assert payload(events[-1]) == {"exit_code": 3}
    assert service.call("GetSession", project_id=project.id, session_id=session.id).state == "exited"
    assert service.call("GetSession", project_id=project.id, session_id=session.id).exit_code == 3


def test_sessions_of_other_projects_are_not_found(service: Service) -> None:
    a = service.call("CreateProject", name="a")
    b = service.call("CreateProject", name="b")
    session = service.call("SpawnSession", project_id=a.id)
    for method, fields in (
        ("GetSession", {"session_id": session.id}),
        ("EndSession", {"session_id": session.id}),
        ("SessionEvents", {"session_id": session.id}),
        ("DeleteWorkspace", {"workspace_id": session.workspace_id}),
    ):
        error = rpc_error(lambda m=method, f=fields: service.call(m, project_id=b.id, **f))  # type: ignore[misc]
        assert error.code() == grpc.StatusCode.NOT_FOUND, method
    service.call("DeleteProject", project_id=a.id)
    assert service.containers()[0].labels["jarvis.project"] == b.id if service.containers() else True


def test_a_sessions_events_by_its_id_alone(service: Service) -> None:
    """The session's id names its project: `session action=events` needs no project_id (issue 37 item 9)."""
    project = service.call("CreateProject", name="by-id")
    session = service.call("SpawnSession", project_id=project.id, prompt="hello")
    named = service.call("SessionEvents", project_id=project.id, session_id=session.id, wait_seconds=2)
    alone = service.call("SessionEvents", session_id=session.id, limit=len(named.events))
    assert [(e.seq, e.type) for e in alone.events] == [(e.seq, e.type) for e in named.events]
    assert alone.state
    missing = rpc_error(lambda: service.call("SessionEvents", session_id="s" + "0" * 12))
    assert missing.code() == grpc.StatusCode.NOT_FOUND
    assert "list sessions with session action=list" in (missing.details() or "")


def all_events(service: Service, project_id: str, session_id: str) -> list[Any]:
    """Every event of the session so far, after a short wait for late ones."""
    page = service.call("SessionEvents", project_id=project_id, session_id=session_id, limit=500, wait_seconds=0)
    late = service.call(
        "SessionEvents", project_id=project_id, session_id=session_id, after=page.next_cursor, wait_seconds=1
    )
    return [*page.events, *late.events]


def count(events: list[Any], kind: str) -> int:
    return sum(1 for e in events if e.type == kind)


def agents_running(service: Service, project_id: str) -> int:
    processes: list[str] = service.call("Exec", project_id=project_id, argv=["ps", "-o", "comm"]).stdout.split()
    return processes.count("fake-agent")


def test_a_spawn_redelivered_with_its_key_returns_the_first_session(service: Service) -> None:
    project = service.call("CreateProject", name="redelivered")
    first = service.call("SpawnSession", project_id=project.id, prompt="hello", idempotency_key="task-42/attempt")
    assert first.idempotency_key == "task-42/attempt"
    wait_for(service, project.id, first.id, lambda e: e.type == "result")
    again = service.call("SpawnSession", project_id=project.id, prompt="hello", idempotency_key="task-42/attempt")
    assert (again.id, again.workspace_id, again.idempotency_key) == (first.id, first.workspace_id, "task-42/attempt")
    events = all_events(service, project.id, first.id)
    assert (count(events, "input"), count(events, "result")) == (1, 1)  # the prompt went to the agent once
    assert [s.id for s in service.call("ListSessions", project_id=project.id).sessions] == [first.id]
    assert len(service.call("ListWorkspaces", project_id=project.id).workspaces) == 1

    # A finished session still answers for its key, as it is; spawns without a key are not affected.
    service.call("EndSession", project_id=project.id, session_id=first.id, force=True)
    ended = service.call("SpawnSession", project_id=project.id, prompt="hello", idempotency_key="task-42/attempt")
    assert (ended.id, ended.state) == (first.id, "ended")
    other = service.call("SpawnSession", project_id=project.id)
    assert (other.id != first.id, other.idempotency_key) == (True, "")


def test_concurrent_spawns_with_one_key_start_one_session(service: Service) -> None:
    project = service.call("CreateProject", name="racing")
    start = threading.Barrier(4)

    def spawn(_: int) -> str:
        start.wait(10)
        return str(service.call("SpawnSession", project_id=project.id, prompt="go", idempotency_key="race-1").id)

    with ThreadPoolExecutor(4) as pool:
        ids = set(pool.map(spawn, range(4)))
    assert len(ids) == 1
    session_id = ids.pop()
    assert [s.id for s in service.call("ListSessions", project_id=project.id).sessions] == [session_id]
    assert len(service.call("ListWorkspaces", project_id=project.id).workspaces) == 1
    wait_for(service, project.id, session_id, lambda e: e.type == "result")
    assert count(all_events(service, project.id, session_id), "input") == 1
    assert agents_running(service, project.id) == 1


def test_a_spawn_losing_the_race_at_the_database_returns_the_winner_and_cleans_up(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another runtime sharing the database inserted the key first: neither look-up saw it, the insert fails."""
    project = service.call("CreateProject", name="replicas")
    winner = service.call("SpawnSession", project_id=project.id, idempotency_key="shared")
    spawner = service.runtime.sessions._spawner
    real = spawner.spawned_with
    looked: list[str] = []

    def blind_twice(project_id: str, key: str | None) -> Any:
        looked.append(project_id)  # the look-ups before the lock and under it miss the winner
        return None if len(looked) <= 2 else real(project_id, key)

    monkeypatch.setattr(spawner, "spawned_with", blind_twice)

    loser = service.call("SpawnSession", project_id=project.id, prompt="again", idempotency_key="shared")
    assert loser.id == winner.id
    assert len(looked) == 3  # the third look-up, after the refused insert, found the winner
    assert [s.id for s in service.call("ListSessions", project_id=project.id).sessions] == [winner.id]
    assert [w.id for w in service.call("ListWorkspaces", project_id=project.id).workspaces] == [winner.workspace_id]
    assert count(all_events(service, project.id, winner.id), "input") == 0
    deadline = time.monotonic() + 10
    while agents_running(service, project.id) > 1 and time.monotonic() < deadline:
        time.sleep(0.2)  # the abandoned agent is killed; its exit may take a moment to be reaped
    assert agents_running(service, project.id) == 1


def test_idempotency_keys_are_checked_and_scoped_to_their_project(service: Service) -> None:
    a = service.call("CreateProject", name="keys-a")
    b = service.call("CreateProject", name="keys-b")
    for bad in ("has space", "x" * 201, "tab\there", "ключ"):
        error = rpc_error(
            lambda k=bad: service.call(
                "SpawnSession",
                project_id=a.id,  # type: ignore[misc]
                idempotency_key=k,
            )
        )
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, bad
        assert "printable ASCII characters without spaces" in error.details()
    assert list(service.call("ListSessions", project_id=a.id).sessions) == []
    assert service.containers() == []  # a refused key starts nothing

    key = "k" * 200
    in_a = service.call("SpawnSession", project_id=a.id, idempotency_key=key)
    in_b = service.call("SpawnSession", project_id=b.id, idempotency_key=key)
    assert in_a.id != in_b.id
    assert (in_a.idempotency_key, in_b.idempotency_key) == (key, key)
    for project, session in ((a, in_a), (b, in_b)):
        assert [s.id for s in service.call("ListSessions", project_id=project.id).sessions] == [session.id]
