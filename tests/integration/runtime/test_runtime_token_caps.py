"""Per-token caps on projects and running containers (issue 34 #8): a token could create projects and start their
containers without end. A project records the token that created it; an admin's (`uncapped`) and the local user's
count against nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import docker
import grpc
import pytest

from jarvis.api.runtime.v1 import runtime_pb2_grpc as pb_grpc
from jarvis.runtime.server import serve_runtime
from tests.integration.runtime.conftest import Service, rpc_error
from tests.support.docker_env import remove_instance
from tests.support.runtime_service import runtime_settings


@pytest.fixture
def capped(tmp_path: Path, image: str, engine: docker.DockerClient) -> Iterator[Service]:
    settings = runtime_settings(
        tmp_path / "runtime", image, max_projects_per_token=2, max_running_containers_per_token=1
    )
    runtime, server = serve_runtime(settings, None, "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        yield Service(runtime, server, pb_grpc.RuntimeServiceStub(channel), settings, engine)
    finally:
        channel.close()
        server.stop(1)
        runtime.close()
        remove_instance(engine, settings.instance)


def test_a_token_owns_at_most_its_cap_of_projects(capped: Service) -> None:
    first = capped.call("CreateProject", name="a1", created_by="token-a")
    capped.call("CreateProject", name="a2", created_by="token-a")
    refused = rpc_error(lambda: capped.call("CreateProject", name="a3", created_by="token-a"))
    assert refused.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "already owns 2 projects" in refused.details()
    assert "max_projects_per_token=2" in refused.details()
    assert "JARVIS_RUNTIME_MAX_PROJECTS_PER_TOKEN" in refused.details()
    # Another token, an admin's request and the local user are not held back by token-a's projects.
    capped.call("CreateProject", name="b1", created_by="token-b")
    capped.call("CreateProject", name="admin1", created_by="token-a", uncapped=True)
    capped.call("CreateProject", name="local1")
    # Deleting one frees its place.
    capped.call("DeleteProject", project_id=first.id)
    capped.call("CreateProject", name="a3", created_by="token-a")
    assert len(capped.call("ListProjects").projects) == 5


def test_a_token_runs_at_most_its_cap_of_containers(capped: Service) -> None:
    one = capped.call("CreateProject", name="c1", created_by="token-a")
    two = capped.call("CreateProject", name="c2", created_by="token-a")
    other = capped.call("CreateProject", name="c3", created_by="token-b")
    assert capped.call("StartContainer", project_id=one.id).state == "running"
    assert capped.call("StartContainer", project_id=one.id).state == "running"  # idempotent: not one more
    refused = rpc_error(lambda: capped.call("StartContainer", project_id=two.id))
    assert refused.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "already has 1 containers running" in refused.details()
    assert "max_running_containers_per_token=1" in refused.details()
    # A session would start the container too: refused the same way.
    spawn = rpc_error(lambda: capped.call("SpawnSession", project_id=two.id, prompt="hello"))
    assert "max_running_containers_per_token=1" in spawn.details()
    assert capped.call("StartContainer", project_id=other.id).state == "running"  # another token's
    capped.call("StopContainer", project_id=one.id)
    assert capped.call("StartContainer", project_id=two.id).state == "running"
