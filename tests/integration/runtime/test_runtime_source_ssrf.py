"""Issue 34 item 6, replayed through the runtime's gRPC service: `CreateProject source_url=https://127.0.0.1:<port>/x`
(what an orchestrator token's `project create` sends) made the runtime host run git against any address, and its
errors told open ports from closed ones. Only loopback is ever contacted here: refusals happen before any connection
(a listener the test runs sees none), and the one allowed name is `localhost`."""

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
from tests.support.loopback_listener import Listener, closed_port
from tests.support.runtime_service import runtime_settings


@pytest.fixture
def listener() -> Iterator[Listener]:
    running = Listener()
    yield running
    running.close()


@pytest.fixture
def allowing_localhost(tmp_path: Path, image: str, engine: docker.DockerClient) -> Iterator[Service]:
    """A runtime whose admin allowed the name `localhost` to resolve to an internal address."""
    settings = runtime_settings(tmp_path / "runtime", image, egress_internal_hosts=["localhost"])
    runtime, server = serve_runtime(settings, None, "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        yield Service(runtime, server, pb_grpc.RuntimeServiceStub(channel), settings, engine)
    finally:
        channel.close()
        server.stop(1)
        runtime.close()
        remove_instance(engine, settings.instance)


@pytest.mark.parametrize(
    "source",
    [
        "https://127.0.0.1:{port}/x",
        "https://localhost:{port}/x",
        "https://[::ffff:127.0.0.1]:{port}/x",
        "ssh://git@127.0.0.1:{port}/x",
    ],
)
def test_a_source_on_an_internal_address_is_refused_before_any_connection(
    service: Service, listener: Listener, source: str
) -> None:
    url = source.format(port=listener.port)
    error = rpc_error(lambda: service.call("CreateProject", name="ssrf", source_url=url, created_by="orchestrator"))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "internal address" in error.details()
    assert "egress_internal_hosts" in error.details()
    assert listener.accepted == 0
    assert list(service.call("ListProjects").projects) == []


def test_open_and_closed_ports_answer_alike_even_where_the_name_is_allowed(
    allowing_localhost: Service, listener: Listener
) -> None:
    closed = closed_port()

    def create(port: int) -> grpc.RpcError:
        url = f"https://localhost:{port}/x"
        return rpc_error(
            lambda: allowing_localhost.call("CreateProject", name="scan", source_url=url, created_by="orchestrator")
        )

    answers = []
    for port in (listener.port, closed):
        error = create(port)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        answers.append(error.details().replace(str(port), "PORT"))
    assert listener.accepted >= 1  # allowed: git did reach the open port, and the answer still does not say so
    assert answers[0] == answers[1]
    assert "could not clone" in answers[0]
    for telltale in ("refused", "ssl", "tls", "timed out", "connect", "reset"):
        assert telltale not in answers[0].lower()


def test_local_sources_still_clone(service: Service, source: Path) -> None:
    for url in (str(source), f"file://{source}"):
        project = service.call("CreateProject", name=f"local{len(url)}", source_url=url)
        assert project.source_url == url
