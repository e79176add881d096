"""Task handles (SEP-2663 through Jarvis): a handle opens only for the caller, surface and server it was sealed to,
and every aggregator process of one deployment (same internal-plane credential) opens every other's."""

from __future__ import annotations

from jarvis.aggregator.downstream.proxy.tasks import TaskHandles, TaskRef
from jarvis.aggregator.downstream.transport.wire import headers_for
from jarvis.common.internal_plane import InternalPlane

REF = TaskRef("alpha", "d0wnstream-task-id")
PLANE = InternalPlane(token="deployment-secret")


def test_a_handle_opens_in_any_process_of_the_deployment_and_names_its_server() -> None:
    handle = TaskHandles.for_plane(PLANE).seal("profile", "duo", "token-1", REF)
    assert handle.startswith("jt1.")
    assert "deployment-secret" not in handle
    assert (
        TaskHandles.for_plane(InternalPlane(token="deployment-secret")).open(handle, "profile", "duo", "token-1") == REF
    )


def test_a_handle_opens_for_nobody_else() -> None:
    handles = TaskHandles.for_plane(PLANE)
    handle = handles.seal("profile", "duo", "token-1", REF)
    assert handles.open(handle, "profile", "duo", "token-2") is None  # another caller
    assert handles.open(handle, "profile", "solo", "token-1") is None  # another profile
    assert handles.open(handle, "share", "duo", "token-1") is None  # another kind of surface
    assert TaskHandles.for_plane(InternalPlane(token="other")).open(handle, "profile", "duo", "token-1") is None
    # Without a credential each process seals with a key of its own.
    assert TaskHandles.for_plane(InternalPlane()).open(handle, "profile", "duo", "token-1") is None


def test_an_altered_or_malformed_handle_opens_to_nothing() -> None:
    handles = TaskHandles.for_plane(PLANE)
    handle = handles.seal("profile", "duo", "token-1", REF)
    version, _server, task, seal = handle.split(".")
    beta = handles.seal("profile", "duo", "token-1", TaskRef("beta", REF.task_id)).split(".")[1]
    for bad in (
        ".".join((version, beta, task, seal)),  # the same task claimed for another server
        ".".join((version, _server, task[:-2], seal)),
        ".".join(("jt2", _server, task, seal)),
        handle + ".x",
        "tasks-conformance-nonexistent-12345",
        "jt1.!!.@@.##",
        "",
    ):
        assert handles.open(bad, "profile", "duo", "token-1") is None, bad


def test_task_requests_carry_the_task_id_as_mcp_name_to_the_server() -> None:
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        headers = headers_for("2026-07-28", method, {"taskId": "d0wnstream-task-id"})
        assert headers["mcp-name"] == "d0wnstream-task-id"
        assert headers["mcp-method"] == method
