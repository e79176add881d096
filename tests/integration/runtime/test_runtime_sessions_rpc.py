"""Agent sessions over real gRPC: stream-json dialogue, resumable events, tool requests, ending, cleanup."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import grpc

from tests.integration.runtime.conftest import Service, rpc_error


def wait_for(service: Service, project_id: str, session_id: str, predicate: Any, after: int = 0,
              timeout: float = 20) -> list[Any]:
    """Events after `after` until one satisfies `predicate` (long-polling like a client would)."""
    seen: list[Any] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page = service.call("SessionEvents", project_id=project_id, session_id=session_id, after=after,
                            wait_seconds=2)
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
    service.call("RespondToolRequest", project_id=project.id, session_id=session.id, request_id="req-1",
                 result_json=json.dumps({"healthy": True}))
    answered = wait_for(service, project.id, session.id, lambda e: "tool answered" in e.payload_json,
                        after=asked[-1].seq)
    assert payload(answered[-1])["answer"]["result"] == {"healthy": True}
    again = rpc_error(lambda: service.call("RespondToolRequest", project_id=project.id, session_id=session.id,
                                           request_id="req-1", result_json="1"))
    assert again.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "already answered" in again.details()
    unknown = rpc_error(lambda: service.call("RespondToolRequest", project_id=project.id, session_id=session.id,
                                             request_id="nope", result_json="1"))
    assert "no tool request 'nope'" in unknown.details()

    busy = rpc_error(lambda: service.call("DeleteWorkspace", project_id=project.id,
                                          workspace_id=session.workspace_id))
    assert busy.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert session.id in busy.details()
    listed = service.call("ListWorkspaces", project_id=project.id).workspaces
    assert [(w.id, w.session_id, w.kind) for w in listed] == [(session.workspace_id, session.id, "worktree")]

    ended = service.call("EndSession", project_id=project.id, session_id=session.id)
    assert ended.state == "ended"
    assert ended.exit_code == 0
    assert "killed" not in ended.detail
    gone = rpc_error(lambda: service.call("MessageSession", project_id=project.id, session_id=session.id,
                                          message="hi"))
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
    for method, fields in (("GetSession", {"session_id": session.id}), ("EndSession", {"session_id": session.id}),
                           ("SessionEvents", {"session_id": session.id}),
                           ("DeleteWorkspace", {"workspace_id": session.workspace_id})):
        error = rpc_error(lambda m=method, f=fields: service.call(m, project_id=b.id, **f))  # type: ignore[misc]
        assert error.code() == grpc.StatusCode.NOT_FOUND, method
    service.call("DeleteProject", project_id=a.id)
    assert service.containers()[0].labels["jarvis.project"] == b.id if service.containers() else True
