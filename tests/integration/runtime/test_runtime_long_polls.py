"""Long-polls cannot starve the runtime (issue 34 #8): four read tokens holding `session events wait=20` filled the
runtime's 64 gRPC threads, so another token's `project list` failed after 5 s."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import docker
import grpc
import pytest

from jarvis.api.runtime.v1 import runtime_pb2 as pb
from jarvis.api.runtime.v1 import runtime_pb2_grpc as pb_grpc
from jarvis.runtime.server import serve_runtime
from tests.integration.runtime.conftest import Service
from tests.integration.runtime.test_runtime_sessions_rpc import wait_for
from tests.support.docker_env import remove_instance
from tests.support.runtime_service import runtime_settings

WORKERS = 8  # the server's threads, small so that a handful of long-polls could fill them
POLLS = 3 * WORKERS


@pytest.fixture
def small_pool(tmp_path: Path, image: str, engine: docker.DockerClient) -> Iterator[Service]:
    settings = runtime_settings(tmp_path / "runtime", image, max_workers=WORKERS, max_waiting_polls=64)
    runtime, server = serve_runtime(settings, None, "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}", options=[("grpc.max_concurrent_streams", 1000)])
    try:
        yield Service(runtime, server, pb_grpc.RuntimeServiceStub(channel), settings, engine)
    finally:
        channel.close()
        server.stop(1)
        runtime.close()
        remove_instance(engine, settings.instance)


def test_long_polls_leave_the_runtime_answering(small_pool: Service) -> None:
    service = small_pool
    project = service.call("CreateProject", name="polled")
    session = service.call("SpawnSession", project_id=project.id, prompt="hello")
    cursor = wait_for(service, project.id, session.id, lambda e: e.type == "result")[-1].seq

    def hold() -> float:
        started = time.monotonic()
        service.stub.SessionEvents(
            pb.SessionEventsRequest(project_id=project.id, session_id=session.id, after=cursor, wait_seconds=6),
            timeout=30,
        )
        return time.monotonic() - started

    with ThreadPoolExecutor(POLLS) as pool:
        polls = [pool.submit(hold) for _ in range(POLLS)]
        time.sleep(1)  # every poll has reached the server
        started = time.monotonic()
        listed = service.stub.ListProjects(pb.ListProjectsRequest(), timeout=3)
        assert [p.id for p in listed.projects] == [project.id]
        assert time.monotonic() - started < 1.5
        # As many polls waited as the bound allows; the others answered at once with what there was (nothing).
        waited = sorted(p.result() for p in polls)
    assert service.runtime.sessions.waits_max == WORKERS // 2  # a setting above half the pool is held to half
    assert sum(1 for s in waited if s > 4) == WORKERS // 2
    assert sum(1 for s in waited if s < 2) == POLLS - WORKERS // 2
    service.call("EndSession", project_id=project.id, session_id=session.id, force=True)
