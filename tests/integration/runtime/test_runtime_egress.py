"""Egress from a project container with no network, through the bridge and the runtime's proxy (real Docker).

The container (`--network none`) reaches a fake upstream on the host's loopback only through its egress
socket; the proxy resolves names from the runtime's fixed table (egress_resolve), and its connector
refuses anything but loopback, so a broken SSRF check fails the test without sending a packet out.
"""

from __future__ import annotations

import asyncio
import http.server
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import grpc
import pytest
from prometheus_client import REGISTRY

from jarvis.api.runtime.v1 import runtime_pb2 as pb
from jarvis.api.runtime.v1 import runtime_pb2_grpc as pb_grpc
from jarvis.common.errors import FailedPrecondition
from jarvis.common.grpc_server import create_server
from jarvis.runtime.adapters.egress_proxy import open_tcp
from jarvis.runtime.app import Runtime
from jarvis.runtime.domain.egress_policy import Address
from jarvis.runtime.server import runtime_bindings
from tests.integration.runtime.conftest import rpc_error
from tests.support.docker_env import egress_agent_image, remove_instance
from tests.support.runtime_service import runtime_settings

PORT = 3128
NAMES = {
    "fake.test": ["127.0.0.1"],
    "meta.test": ["169.254.169.254"],
    "private.test": ["10.0.0.5"],
    "ula.test": ["fd00:ec2::254"],
}


class Upstream(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"hello from upstream {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@dataclass
class Egress:
    stub: pb_grpc.RuntimeServiceStub
    upstream: int
    connected: list[str]

    def exec(self, project_id: str, command: str) -> pb.ExecResponse:
        response: pb.ExecResponse = self.stub.Exec(
            pb.ExecRequest(project_id=project_id, command=command, timeout_seconds=30), timeout=60
        )
        return response


@pytest.fixture
def egress(tmp_path: Path, engine: docker.DockerClient) -> Iterator[Egress]:
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    connected: list[str] = []

    async def loopback_only(address: Address, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        connected.append(f"{address}:{port}")
        if not address.is_loopback:
            raise AssertionError(f"the proxy tried to connect to {address}; tests reach loopback only")
        return await open_tcp(address, port)

    settings = runtime_settings(
        tmp_path / "rt",
        egress_agent_image(engine),
        egress_resolve=NAMES,
        egress_internal_hosts=["fake.test"],
        egress_port=PORT,
    )
    runtime = Runtime.open(settings, egress_connector=loopback_only)
    server = create_server(runtime_bindings(runtime), "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        yield Egress(pb_grpc.RuntimeServiceStub(channel), upstream.server_address[1], connected)
    finally:
        channel.close()
        server.stop(1)
        runtime.close()
        remove_instance(engine, settings.instance)
        upstream.shutdown()
        upstream.server_close()


def _refused(reason: str) -> float:
    return REGISTRY.get_sample_value("jarvis_egress_connections_total", {"outcome": reason}) or 0.0


def test_a_container_without_network_reaches_only_allowed_hosts(
    egress: Egress, engine: docker.DockerClient, caplog: pytest.LogCaptureFixture
) -> None:
    up = egress.upstream
    project = egress.stub.CreateProject(
        pb.CreateProjectRequest(
            name="egress", egress_allow=[f"fake.test:{up}", "meta.test", "private.test", "ula.test"]
        ),
        timeout=60,
    )
    assert list(project.egress_allow) == [f"fake.test:{up}", "meta.test", "private.test", "ula.test"]
    container = egress.stub.StartContainer(pb.ProjectRef(project_id=project.id), timeout=60)
    assert engine.api.inspect_container(container.id)["HostConfig"]["NetworkMode"] == "none"

    # Plain HTTP through HTTP_PROXY (busybox wget reads http_proxy), and HTTPS-style CONNECT (socat).
    got = egress.exec(project.id, f"wget -q -O - http://fake.test:{up}/plain")
    assert (got.exit_code, got.stdout) == (0, "hello from upstream /plain"), got.stderr
    tunnel = egress.exec(
        project.id,
        f"printf 'GET /tunnel HTTP/1.0\\r\\n\\r\\n' | socat - PROXY:127.0.0.1:fake.test:{up},proxyport={PORT}",
    )
    assert tunnel.exit_code == 0, tunnel.stderr
    assert tunnel.stdout.endswith("hello from upstream /tunnel")
    # Without the proxy there is no way out: no route, not even to the host's loopback.
    direct = egress.exec(project.id, f"wget -q -T 3 -O - http://127.0.0.1:{up}/ 2>&1; echo rc=$?")
    assert "hello" not in direct.stdout
    assert "rc=0" not in direct.stdout
    assert egress.connected == [f"127.0.0.1:{up}"] * 2

    before = _refused("not_allowed")
    with caplog.at_level(logging.WARNING, logger="jarvis.runtime.adapters.egress_proxy"):
        blocked = egress.exec(project.id, f"wget -q -O - http://blocked.test:{up}/ 2>&1; echo rc=$?")
    assert "403" in blocked.stdout
    assert "rc=1" in blocked.stdout
    assert _refused("not_allowed") == before + 1
    refused = [r for r in caplog.records if r.getMessage() == "egress refused"]
    assert (refused[-1].__dict__["project"], refused[-1].__dict__["host"]) == (project.id, "blocked.test")

    internal = _refused("internal_address")
    for host in ("meta.test", "private.test", "ula.test"):
        answer = egress.exec(project.id, f"printf '' | socat - PROXY:127.0.0.1:{host}:443,proxyport={PORT} 2>&1")
        assert answer.exit_code != 0
        assert "Forbidden" in answer.stdout, answer.stdout
    assert _refused("internal_address") == internal + 3
    assert egress.connected == [f"127.0.0.1:{up}"] * 2  # refused before any connection


def test_bad_allowlist_entries_and_projects_without_hosts(egress: Egress, engine: docker.DockerClient) -> None:
    bad = rpc_error(
        lambda: egress.stub.CreateProject(
            pb.CreateProjectRequest(name="bad", egress_allow=["https://api.example.com/v1"]), timeout=60
        )
    )
    assert bad.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "is not a host name" in (bad.details() or "")
    assert not egress.stub.ListProjects(pb.ListProjectsRequest(), timeout=10).projects

    # Nothing allowed: no bridge runs, and the proxy variables lead nowhere.
    project = egress.stub.CreateProject(pb.CreateProjectRequest(name="closed"), timeout=60)
    egress.stub.StartContainer(pb.ProjectRef(project_id=project.id), timeout=60)
    got = egress.exec(project.id, f"wget -q -T 3 -O - http://fake.test:{egress.upstream}/ 2>&1; echo rc=$?")
    assert "hello" not in got.stdout
    assert "rc=1" in got.stdout
    assert egress.connected == []


def test_stopping_the_container_closes_its_socket_and_a_restart_serves_again(egress: Egress) -> None:
    up = egress.upstream
    project = egress.stub.CreateProject(
        pb.CreateProjectRequest(name="again", egress_allow=[f"fake.test:{up}"]), timeout=60
    )
    ref = pb.ProjectRef(project_id=project.id)
    egress.stub.StartContainer(ref, timeout=60)
    assert egress.exec(project.id, f"wget -q -O - http://fake.test:{up}/1").exit_code == 0
    egress.stub.StopContainer(ref, timeout=60)
    egress.stub.StartContainer(ref, timeout=60)
    again = egress.exec(project.id, f"wget -q -O - http://fake.test:{up}/2")
    assert (again.exit_code, again.stdout) == (0, "hello from upstream /2"), again.stderr


def test_a_runtime_restart_serves_a_running_container_again(tmp_path: Path, engine: docker.DockerClient) -> None:
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    up = upstream.server_address[1]
    settings = runtime_settings(
        tmp_path / "rt", egress_agent_image(engine), egress_resolve=NAMES, egress_internal_hosts=["fake.test"]
    )
    try:
        first = Runtime.open(settings)
        project = first.projects.create("restart", "", "", [], "", False, [f"fake.test:{up}"])
        first.containers.start(project.id)
        first.close()  # the container and its bridge keep running; the proxy and its socket go
        second = Runtime.open(settings)
        try:
            second.reconcile()
            got = second.containers.exec(project.id, [], f"wget -q -O - http://fake.test:{up}/back", "", 30, 0)
            assert (got.exit_code, got.stdout) == (0, "hello from upstream /back"), got.stderr
        finally:
            second.close()
    finally:
        remove_instance(engine, settings.instance)
        upstream.shutdown()
        upstream.server_close()


def test_an_image_without_the_bridge_fails_the_start_with_the_reason(
    tmp_path: Path, engine: docker.DockerClient, image: str
) -> None:
    settings = runtime_settings(tmp_path / "rt", image)  # the fake-agent image has no socat
    runtime = Runtime.open(settings)
    try:
        project = runtime.projects.create("nosocat", "", "", [], "", False, ["api.example.com"])
        with pytest.raises(FailedPrecondition) as exc:
            runtime.containers.start(project.id)
        assert "`socat` is not in the image" in exc.value.message
        assert "jarvis image build" in exc.value.message
    finally:
        runtime.close()
        remove_instance(engine, settings.instance)
