"""AttachServer over real gRPC on a real Docker engine: an MCP server image with its stdio on the stream,
hardened like every runtime container, removed with its stream, and reaped when a runtime restarts."""

from __future__ import annotations

import json
import queue
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import grpc
import pytest
from prometheus_client import CollectorRegistry

from jarvis.api.runtime.v1 import runtime_pb2 as pb
from jarvis.api.runtime.v1 import runtime_pb2_grpc as pb_grpc
from jarvis.common.metrics import GrpcMetrics
from jarvis.runtime.server import serve_runtime
from tests.integration.runtime.conftest import Service
from tests.support.docker_env import remove_instance
from tests.support.mcp_server_image import mcp_server_image
from tests.support.runtime_service import runtime_settings

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}


@pytest.fixture(scope="module")
def mcp_image(engine: docker.DockerClient) -> str:
    return mcp_server_image(engine)


class Attached:
    """One AttachServer call driven by the test: stdin goes through a queue, output is read as it comes."""

    def __init__(self, stub: pb_grpc.RuntimeServiceStub, start: pb.ServerStart) -> None:
        self._inputs: queue.Queue[pb.ServerInput | None] = queue.Queue()
        self._inputs.put(pb.ServerInput(start=start))
        self.call = stub.AttachServer(self._requests(), timeout=120)
        self.stdout = b""
        self.stderr = b""
        self.exited: pb.ServerExited | None = None

    def _requests(self) -> Iterator[pb.ServerInput]:
        while (message := self._inputs.get()) is not None:
            yield message

    def started(self) -> pb.ServerStarted:
        first: pb.ServerOutput = next(self.call)
        assert first.WhichOneof("output") == "started", first
        return first.started

    def send(self, message: dict[str, Any]) -> None:
        # Compact, as Jarvis sends it (the test server reads "key":"value" pairs without spaces).
        self._inputs.put(pb.ServerInput(stdin=json.dumps(message, separators=(",", ":")).encode() + b"\n"))

    def end_input(self) -> None:
        self._inputs.put(None)

    def _take(self) -> None:
        output = next(self.call)
        kind = output.WhichOneof("output")
        if kind == "exited":
            self.exited = output.exited
        else:
            setattr(self, kind, getattr(self, kind) + getattr(output, kind))

    def reply(self) -> Any:
        """The next line on stdout, as JSON."""
        while b"\n" not in self.stdout:
            self._take()
        line, _, self.stdout = self.stdout.partition(b"\n")
        return json.loads(line)

    def until_exit(self) -> pb.ServerExited:
        for _ in range(1000):
            if self.exited is not None:
                return self.exited
            self._take()
        raise AssertionError("no exited message")


def attach(service: Service, image: str, **fields: Any) -> Attached:
    return Attached(service.stub, pb.ServerStart(server=fields.pop("server", "box"), image=image, **fields))


def wait_gone(engine: docker.DockerClient, container_id: str, timeout: float = 20) -> None:
    # Sparse: ids from one listing. A full listing inspects each container after listing them all, and one removed
    # in between (this very container, as it goes) raised NotFound from the listing itself.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if container_id not in {c.id for c in engine.containers.list(all=True, sparse=True)}:
            return
        time.sleep(0.1)
    raise AssertionError(f"container {container_id[:12]} still exists after {timeout} s")


def test_attach_speaks_mcp_in_a_hardened_container(service: Service, mcp_image: str) -> None:
    attached = attach(service, mcp_image, env={"GREETING": "hi"})
    started = attached.started()
    attached.send(INITIALIZE)
    answer = attached.reply()
    assert answer["id"] == 1
    assert answer["result"]["protocolVersion"] == "2025-06-18"
    assert "tools" in answer["result"]["capabilities"]
    attached.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    attached.send(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "through the box"}},
        }
    )
    assert attached.reply()["result"]["content"][0]["text"] == "through the box"

    data = service.engine.api.inspect_container(started.container_id)
    host, config = data["HostConfig"], data["Config"]
    assert started.image == mcp_image
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert "no-new-privileges:true" in host["SecurityOpt"]
    assert host["Init"] is True
    assert host["Memory"] == 128 * 2**20
    assert host["PidsLimit"] == 64
    assert host["NanoCpus"] == 10**9
    assert "/tmp" in host["Tmpfs"]
    assert config["User"] == "1000:1000"
    assert (config["OpenStdin"], config["StdinOnce"], config["Tty"]) == (True, True, False)
    assert "GREETING=hi" in config["Env"]
    assert config["Labels"]["jarvis.server"] == "box"
    assert config["Labels"]["jarvis.runtime.instance"] == service.settings.instance

    # The end of the caller's stream is the end of the server's stdin: it exits, and its container goes.
    attached.end_input()
    exited = attached.until_exit()
    assert exited.exit_code == 0
    assert b"ready as uid 1000" in attached.stderr
    assert b"stdin closed" in attached.stderr
    wait_gone(service.engine, started.container_id)


def test_a_crash_reports_its_exit_code_and_stderr(service: Service, mcp_image: str) -> None:
    attached = attach(service, mcp_image)
    started = attached.started()
    attached.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "crash", "arguments": {}}})
    exited = attached.until_exit()
    assert exited.exit_code == 7
    assert not exited.oom_killed
    assert b"crashing as asked" in attached.stderr
    attached.end_input()
    wait_gone(service.engine, started.container_id)


def test_a_server_that_ignores_its_closed_input_is_stopped(service: Service, image: str) -> None:
    attached = attach(service, image, args=["sleep", "1000"])  # never reads stdin
    started = attached.started()
    attached.end_input()
    exited = attached.until_exit()  # the grace period is 2 s here
    assert exited.exit_code != 0
    assert "did not exit within 2 s of its input closing" in exited.detail
    wait_gone(service.engine, started.container_id)


def test_a_cancelled_call_removes_the_container(service: Service, mcp_image: str) -> None:
    attached = attach(service, mcp_image)
    started = attached.started()
    assert service.engine.containers.get(started.container_id).status == "running"
    attached.call.cancel()  # the caller went away: nobody holds the server's stdio any more
    wait_gone(service.engine, started.container_id)
    attached.end_input()


def test_a_missing_image_says_which_and_what_to_do(service: Service) -> None:
    attached = attach(service, "jarvis-test-absent:never")
    with pytest.raises(grpc.RpcError) as caught:
        attached.started()
    attached.end_input()
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "jarvis-test-absent:never" in caught.value.details()
    assert "never pulls" in caught.value.details()
    assert "docker load" in caught.value.details()
    assert not [c for c in service.containers() if "jarvis.server" in c.labels]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"image": ""}, "image is required"),
        ({"env": {"1BAD": "x"}}, "invalid environment variable name '1BAD'"),
        ({"server": "Not A Name"}, "invalid server name"),
        ({"image": "UPPER/case"}, "invalid image reference"),
    ],
)
def test_bad_input_is_an_invalid_argument(
    service: Service, mcp_image: str, fields: dict[str, Any], expected: str
) -> None:
    attached = attach(service, fields.pop("image", mcp_image), **fields)
    with pytest.raises(grpc.RpcError) as caught:
        attached.started()
    attached.end_input()
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert expected in caught.value.details()


def test_the_first_message_must_start_the_server(service: Service) -> None:
    def requests() -> Iterator[pb.ServerInput]:
        yield pb.ServerInput(stdin=b"{}\n")

    with pytest.raises(grpc.RpcError) as caught:
        next(service.stub.AttachServer(requests(), timeout=30))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "first message" in caught.value.details()


def test_server_containers_left_by_a_previous_runtime_are_removed_at_start(
    tmp_path: Path, image: str, mcp_image: str, engine: docker.DockerClient
) -> None:
    settings = runtime_settings(tmp_path / "runtime", image)
    # What a killed runtime leaves behind: a server container whose stdio nobody holds any more.
    leftover = engine.containers.create(
        mcp_image,
        network_mode="none",
        labels={"jarvis.runtime": "1", "jarvis.runtime.instance": settings.instance, "jarvis.server": "ghost"},
    )
    runtime, server = serve_runtime(settings, None, "127.0.0.1:0")
    try:
        runtime.ensure_reconciled()
        assert leftover.id is not None
        wait_gone(engine, leftover.id, timeout=5)
    finally:
        server.stop(1)
        runtime.close()
        remove_instance(engine, settings.instance)


def test_streaming_calls_are_measured_and_their_errors_mapped_like_unary_ones(
    tmp_path: Path, image: str, mcp_image: str, engine: docker.DockerClient
) -> None:
    """The server's interceptor covers AttachServer: status codes from domain errors, and call metrics."""
    settings = runtime_settings(tmp_path / "runtime", image)
    registry = CollectorRegistry()
    runtime, server = serve_runtime(settings, GrpcMetrics(registry), "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    service = Service(runtime, server, pb_grpc.RuntimeServiceStub(channel), settings, engine)
    try:
        served = attach(service, mcp_image)
        served.started()
        served.end_input()
        assert served.until_exit().exit_code == 0
        missing = attach(service, "jarvis-test-absent:never")
        with pytest.raises(grpc.RpcError) as caught:
            missing.started()
        missing.end_input()
        assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION

        def handled(code: str) -> float | None:
            return registry.get_sample_value(
                "jarvis_grpc_server_handled_total",
                {
                    "grpc_service": "jarvis.api.runtime.v1.RuntimeService",
                    "grpc_method": "AttachServer",
                    "grpc_code": code,
                },
            )

        deadline = time.monotonic() + 10  # the server records a stream once its handler has returned
        while (handled("OK"), handled("FAILED_PRECONDITION")) != (1.0, 1.0) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (handled("OK"), handled("FAILED_PRECONDITION")) == (1.0, 1.0)
    finally:
        channel.close()
        server.stop(1)
        runtime.close()
        remove_instance(engine, settings.instance)
