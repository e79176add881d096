"""Projects and containers over real gRPC on a real Docker engine: lifecycle, hardening, bad input."""

from __future__ import annotations

import time
from pathlib import Path

import grpc
import pytest

from jarvis.api.runtime.v1 import runtime_pb2 as pb
from jarvis.api.runtime.v1 import runtime_pb2_grpc as pb_grpc
from jarvis.runtime.server import serve_runtime
from tests.integration.runtime.conftest import Service, rpc_error
from tests.support.runtime_service import runtime_settings


def test_project_lifecycle_with_a_git_source(service: Service, source: Path) -> None:
    project = service.call("CreateProject", name="demo", source_url=str(source))
    assert project.git
    assert project.container.state == "absent"
    assert [p.id for p in service.call("ListProjects").projects] == [project.id]
    started = service.call("StartContainer", project_id=project.id)
    assert started.state == "running"
    assert service.call("StartContainer", project_id=project.id).id == started.id  # idempotent

    inspected = service.engine.api.inspect_container(started.id)
    host = inspected["HostConfig"]
    assert host["CapDrop"] == ["ALL"]
    assert "no-new-privileges:true" in host["SecurityOpt"]
    assert host["ReadonlyRootfs"] is True
    assert host["NetworkMode"] == "none"
    assert host["PidsLimit"] == 64
    assert host["Memory"] == 128 * 1024 * 1024
    assert inspected["Config"]["User"] == "1000:1000"
    assert inspected["Config"]["Labels"]["jarvis.project"] == project.id

    who = service.call("Exec", project_id=project.id, argv=["id", "-u"])
    assert (who.exit_code, who.stdout.strip()) == (0, "1000")
    listing = service.call("Exec", project_id=project.id, command="cat README.md; touch /etc/x; touch README.md")
    assert "hello" in listing.stdout
    assert "Read-only file system" in listing.stderr
    assert listing.exit_code != 0
    logs = service.call("ContainerLogs", project_id=project.id, tail=10)
    assert logs.truncated is False

    stopped = service.call("StopContainer", project_id=project.id)
    assert stopped.state == "exited"
    stopped_exec = rpc_error(lambda: service.call("Exec", project_id=project.id, argv=["true"]))
    assert stopped_exec.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "container action=start" in stopped_exec.details()

    deleted = service.call("DeleteProject", project_id=project.id)
    assert deleted.container_removed
    assert service.containers() == []
    assert not (service.settings.projects_dir / project.id).exists()
    gone = rpc_error(lambda: service.call("GetProject", project_id=project.id))
    assert gone.code() == grpc.StatusCode.NOT_FOUND


def test_exec_limits_contain_runaway_commands(service: Service) -> None:
    project = service.call("CreateProject", name="limits")
    service.call("StartContainer", project_id=project.id)

    endless = service.call("Exec", project_id=project.id, command="while :; do :; done", timeout_seconds=2)
    assert endless.timed_out
    assert endless.exit_code == 137
    assert endless.duration_ms < 10_000

    flood = service.call("Exec", project_id=project.id, argv=["yes"], max_output_bytes=4096)
    assert flood.truncated
    assert len(flood.stdout) <= 4096
    assert flood.exit_code == 137

    baseline = service.call("Exec", project_id=project.id, command="ls -d /proc/[0-9]* | wc -l").stdout
    bomb = service.call("Exec", project_id=project.id, command="b() { b | b & }; b", timeout_seconds=5)
    # Contained either way: the pids limit stops it from spreading, and the exec's process-group
    # clean-up (or its timeout) leaves nothing of it behind once the call returns.
    assert bomb.duration_ms < 15_000
    # Killed processes can take a moment to be reaped; a real leak would still be there after 5 s.
    deadline = time.monotonic() + 5
    while True:
        left = service.call("Exec", project_id=project.id, command="ls -d /proc/[0-9]* | wc -l").stdout
        if int(left) <= int(baseline) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert int(left) <= int(baseline)
    memory = service.call(
        "Exec", project_id=project.id, argv=["dd", "if=/dev/zero", "of=/dev/null", "bs=256M", "count=1"]
    )
    assert memory.exit_code != 0  # a 256 MiB buffer does not fit in the 128 MiB limit

    # The container survives all of it and still answers at once.
    after = service.call("Exec", project_id=project.id, argv=["echo", "alive"], timeout_seconds=10)
    assert (after.exit_code, after.stdout) == (0, "alive\n")
    limits = service.call("GetLimits")
    assert (limits.pids, limits.memory, list(limits.cap_drop)) == (64, "128m", ["ALL"])


def test_arguments_reach_the_container_verbatim(service: Service, tmp_path: Path) -> None:
    project = service.call("CreateProject", name="argv")
    service.call("StartContainer", project_id=project.id)
    marker = tmp_path / "pwned"
    out = service.call("Exec", project_id=project.id, argv=["echo", f"; touch {marker}", "$(id)", "`id`"])
    assert out.stdout == f"; touch {marker} $(id) `id`\n"
    shell = service.call("Exec", project_id=project.id, command=f"touch {marker} 2>&1; id -u")
    assert shell.stdout.strip().endswith("1000")  # the shell ran inside the container, as its user
    assert not marker.exists()


@pytest.mark.parametrize(
    "source_url",
    [
        "ext::sh -c touch% /tmp/jarvis-pwned-ext",
        "--upload-pack=touch /tmp/jarvis-pwned-up",
        "-oProxyCommand=x",
        "relative/path",
        "fd::3",
        "git@example.invalid:x/y.git",
        "file://otherhost/srv/repo",
        "/tmp/../etc",
        "http://example.invalid/x.git",
    ],
)
def test_dangerous_sources_are_refused(service: Service, source_url: str) -> None:
    error = rpc_error(lambda: service.call("CreateProject", name="bad", source_url=source_url))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "source_url" in error.details()
    assert not Path("/tmp/jarvis-pwned-ext").exists()
    assert not Path("/tmp/jarvis-pwned-up").exists()
    assert list(service.call("ListProjects").projects) == []


# This repository itself: a real local repository outside the test roots (the temp dir).
OUTSIDE_REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("source_url", "reason"),
    [
        (f"file://{OUTSIDE_REPO}", "outside the allowed project roots"),
        (str(OUTSIDE_REPO), "outside the allowed project roots"),
        ("file:///tmp/../etc", "without '..'"),
        ("file:///tmp/%2e%2e/root", "without '..'"),
    ],
)
def test_local_sources_are_confined_to_the_project_roots(
    service: Service, tmp_path: Path, source_url: str, reason: str
) -> None:
    """Issue 15: `file://` sources accepted `..` and any local repository on the runtime's host."""
    error = rpc_error(lambda: service.call("CreateProject", name="confined", source_url=source_url))
    assert error.code() in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.INVALID_ARGUMENT)
    assert reason in error.details()
    assert list(service.call("ListProjects").projects) == []
    link = tmp_path / "inside-link"  # under the roots by name, outside once resolved
    link.symlink_to(OUTSIDE_REPO)
    escaped = rpc_error(lambda: service.call("CreateProject", name="confined", source_url=f"file://{link}"))
    assert escaped.code() == grpc.StatusCode.PERMISSION_DENIED


@pytest.mark.parametrize("project_id", ["../../etc", "p/../x", "", "p0123456789ab; rm -rf /", "P0123456789AB"])
def test_malformed_ids_name_nothing(service: Service, project_id: str) -> None:
    error = rpc_error(lambda: service.call("GetProject", project_id=project_id))
    assert error.code() in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT)
    project = service.call("CreateProject", name=f"ids-{len(project_id)}")
    for workspace_id in ("../repo", "w../../x", "w0123456789ab"):
        wrong = rpc_error(
            lambda w=workspace_id: service.call(
                "DeleteWorkspace",
                project_id=project.id,  # type: ignore[misc]
                workspace_id=w,
            )
        )
        assert wrong.code() == grpc.StatusCode.NOT_FOUND
        assert "workspace action=list" in wrong.details()
    assert (service.settings.projects_dir / project.id / "repo").is_dir()


def test_creation_is_all_or_nothing(service: Service, tmp_path: Path) -> None:
    missing = rpc_error(lambda: service.call("CreateProject", name="nope", source_url=str(tmp_path / "missing")))
    assert missing.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "cloning" in missing.details()
    assert "source_url" in missing.details()
    no_image = rpc_error(lambda: service.call("CreateProject", name="nope", image="jarvis-absent:1"))
    assert no_image.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "jarvis-absent:1" in no_image.details()
    assert service.settings.docker_host in no_image.details()
    assert "`jarvis image build` (`--tag jarvis-absent:1` for that name)" in no_image.details()
    bad_name = rpc_error(lambda: service.call("CreateProject", name="../x"))
    assert bad_name.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert list(service.call("ListProjects").projects) == []
    assert (
        [p.name for p in service.settings.projects_dir.iterdir()] == []
        if service.settings.projects_dir.exists()
        else True
    )
    service.call("CreateProject", name="taken")
    twice = rpc_error(lambda: service.call("CreateProject", name="taken"))
    assert twice.code() == grpc.StatusCode.ALREADY_EXISTS


def test_image_rebuild_streams_build_output_and_is_used(service: Service, source: Path) -> None:
    project = service.call("CreateProject", name="build", source_url=str(source))
    built = service.call("RebuildImage", project_id=project.id)
    assert built.ok, built.error
    assert built.image == f"jarvis-project-{project.id}:latest"
    events = service.call("SessionEvents", project_id=project.id, session_id=built.build_id, limit=500).events
    assert events[-1].type == "build_end"
    assert any("RUN echo built" in e.payload_json for e in events)
    assert service.call("GetProject", project_id=project.id).image == built.image
    service.call("StartContainer", project_id=project.id)
    assert service.call("Exec", project_id=project.id, argv=["cat", "/built.txt"]).stdout == "built\n"
    service.engine.images.remove(built.image, force=True)


def test_tasks_come_from_the_checkout(service: Service, source: Path) -> None:
    project = service.call("CreateProject", name="tasks", source_url=str(source))
    tasks = {(t.source, t.name): list(t.command) for t in service.call("ProjectTasks", project_id=project.id).tasks}
    assert tasks == {
        ("Makefile", "test"): ["make", "test"],
        ("Makefile", "lint"): ["make", "lint"],
        ("package.json", "dev"): ["npm", "run", "dev"],
    }


def test_a_docker_engine_that_is_down_gets_a_clear_error(tmp_path: Path, image: str) -> None:
    settings = runtime_settings(tmp_path / "runtime", image, docker_host=f"unix://{tmp_path}/no-docker.sock")
    runtime, server = serve_runtime(settings, None, "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        stub = pb_grpc.RuntimeServiceStub(channel)
        assert list(stub.ListProjects(pb.ListProjectsRequest(), timeout=30).projects) == []
        down = rpc_error(lambda: stub.CreateProject(pb.CreateProjectRequest(name="x"), timeout=30))
        assert down.code() == grpc.StatusCode.UNAVAILABLE
        assert settings.docker_host in down.details()
        assert "scripts/dockerd" in down.details()
        options = stub.ProjectOptions(pb.ProjectOptionsRequest(), timeout=30)
        assert options.docker_reachable is False
        assert settings.docker_host in options.docker_detail
    finally:
        channel.close()
        server.stop(1)
        runtime.close()
